package inventory_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/inventory"
)

func TestTemplateRoundTripsThroughYAMLAndJSON(t *testing.T) {
	tmpl := inventory.NewTemplate("toy", "2x Toy GPU", inventory.ModeDynamicMIG, toyNode(2))
	y, err := tmpl.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	j, err := json.Marshal(tmpl)
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{"yaml": y, "json": j} {
		got, err := inventory.ParseTemplate(data)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if !reflect.DeepEqual(got, tmpl) {
			t.Errorf("%s round trip changed the template", name)
		}
	}
}

func TestNewTemplateDropsUUIDsAndCopies(t *testing.T) {
	n := toyNode(1)
	n.GPUs[0].MIGDevices = []inventory.MIGDevice{{UUID: "MIG-x", GIProfileID: 0}}
	tmpl := inventory.NewTemplate("toy", "", inventory.ModeGPU, n)
	if tmpl.Node.GPUs[0].UUID != "" || tmpl.Node.GPUs[0].MIGDevices[0].UUID != "" {
		t.Error("template kept UUIDs of the recorded node")
	}
	if n.GPUs[0].UUID == "" || n.GPUs[0].MIGDevices[0].UUID == "" {
		t.Error("NewTemplate modified the node")
	}
	tmpl.Node.GPUs[0].MIGProfiles[0].Placements[0].Start = 99
	if n.GPUs[0].MIGProfiles[0].Placements[0].Start == 99 {
		t.Error("template shares placements with the node")
	}
}

func TestTemplateSlicesDifferOnlyByNodeNameAndIdentities(t *testing.T) {
	tmpl := inventory.NewTemplate("toy", "", inventory.ModeDynamicMIG, toyNode(2))
	a, err := tmpl.Slices("node-a", 0)
	if err != nil {
		t.Fatal(err)
	}
	b, err := tmpl.Slices("node-b", 0)
	if err != nil {
		t.Fatal(err)
	}
	uuids := regexp.MustCompile(`(GPU|MIG)-[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}`)
	ya := uuids.ReplaceAllString(strings.ReplaceAll(marshal(t, a), "node-a", "NODE"), "UUID")
	yb := uuids.ReplaceAllString(strings.ReplaceAll(marshal(t, b), "node-b", "NODE"), "UUID")
	if ya != yb {
		t.Error("slices of two nodes of one template differ beyond the node name and UUIDs")
	}
	for _, d := range devices(a) {
		if str(d, "uuid") == "<absent>" && str(d, "parentUUID") == "<absent>" {
			t.Errorf("%s of a hypothetical node has no identity", d.Name)
		}
	}
}

func TestParseTemplateRejectsBadInput(t *testing.T) {
	for _, tc := range []struct{ name, data, want string }{
		{"unknown field", "name: x\nnode: {gpus: [{minr: 1}]}\n", `unknown field "minr"`},
		{"missing name", "node: {}\n", "name: required"},
		{"not YAML", "name: [\n", "error converting YAML"},
		{"a second YAML document", "name: x\n---\nname: y\n", "more than one document"},
		{"a second YAML document that is not a template", "name: x\n---\nkind: Pod\n", "more than one document"},
		{"a second JSON object", `{"name": "x"} {"name": "y"}`, "more than one document"},
		{"a second JSON object on the next line", "{\"name\": \"x\"}\n{\"name\": \"y\"}\n", "more than one document"},
		{"trailing text after JSON", `{"name": "x"}trailing`, "more than one document"},
		{"a stray bracket after JSON", `{"name": "x"}]`, "after the template"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := inventory.ParseTemplate([]byte(tc.data))
			if !errors.Is(err, inventory.ErrInvalidTemplate) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("err = %v, want ErrInvalidTemplate mentioning %q", err, tc.want)
			}
		})
	}
}

func TestParseTemplateAcceptsEmptyDocumentsAroundIt(t *testing.T) {
	for _, data := range []string{"---\nname: x\n", "name: x\n---\n", "---\nname: x\n---\n\n---\n", "\n{\"name\": \"x\"}\n\n"} {
		got, err := inventory.ParseTemplate([]byte(data))
		if err != nil || got.Name != "x" {
			t.Errorf("%q: got (%q, %v), want the template named x", data, got.Name, err)
		}
	}
}

func TestShippedProfiles(t *testing.T) {
	if got, want := inventory.ProfileNames(), []string{"dgxa100", "dgxb200", "dgxh100", "dgxh200"}; !reflect.DeepEqual(got, want) {
		t.Fatalf("ProfileNames() = %v, want %v", got, want)
	}
	// Expected figures from go-nvml v0.13.4-1 pkg/nvml/mock/gpus: each DGX
	// has 8 GPUs with 7 GPU-instance profiles; the A100 has placements
	// 7+3+2+1+1+7+4 = 25, the others 7+3+2+1+1+7+7 = 28, plus the whole GPU
	// except on the A100, recorded with MIG enabled, which cannot switch
	// MIG off without a reset and so does not give itself whole.
	for _, tc := range []struct {
		name, product string
		perGPU        int
	}{
		{"dgxa100", "NVIDIA A100-SXM4-40GB", 25},
		{"dgxh100", "NVIDIA H100 80GB HBM3", 29},
		{"dgxh200", "NVIDIA H200 141GB HBM3e", 29},
		{"dgxb200", "NVIDIA B200 180GB HBM3e", 29},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := inventory.Profile(tc.name)
			if err != nil {
				t.Fatal(err)
			}
			sl := mustSlices(t, p.Node, inventory.Options{NodeName: "new-node", Mode: p.Mode})
			if got := len(devices(sl)); got != 8*tc.perGPU {
				t.Errorf("%d devices, want 8x%d", got, tc.perGPU)
			}
			if got := len(counterSets(sl)); got != 8 {
				t.Errorf("%d counter sets, want 8", got)
			}
			if got := str(devices(sl)[0], "productName"); got != tc.product {
				t.Errorf("productName %q, want %q", got, tc.product)
			}
		})
	}
	if _, err := inventory.Profile("dgx-nope"); !errors.Is(err, inventory.ErrUnknownProfile) {
		t.Errorf("unknown profile: err = %v", err)
	}
}
