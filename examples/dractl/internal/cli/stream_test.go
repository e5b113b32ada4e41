package cli

import (
	"bytes"
	"context"
	"io"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/dralloc/dralloc/allocator"
	"github.com/dralloc/dralloc/allocator/manifest"
)

// loadCluster builds the cluster of dir as explain does.
func loadCluster(t *testing.T, dir string) *cluster {
	t.Helper()
	objs, err := manifest.Load([]string{dir}, manifest.Options{SkipUnknown: true, Validate: validate})
	if err != nil {
		t.Fatal(err)
	}
	c, err := buildCluster(objs, io.Discard, "dractl", false, true)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestListEncoderAsWhole: the document written item by item is byte for byte the one encode writes
// whole, in YAML and JSON, for every pending pod's answer on the test clusters (reasons on every
// node, allocator explanations, devices given) and for items whose strings YAML and JSON quote, fold
// or escape.
func TestListEncoderAsWhole(t *testing.T) {
	var verdicts []podVerdict
	for _, dir := range []string{reasons, demo, "testdata/gang"} {
		c := loadCluster(t, dir)
		for _, pod := range c.pending {
			v, err := c.explainPod(context.Background(), pod)
			if err != nil {
				t.Fatalf("%s: %v", dir, err)
			}
			verdicts = append(verdicts, v)
		}
	}
	long := strings.Repeat("a reason longer than a line of eighty columns, ", 4)
	odd := []podVerdict{
		{Pod: "ns/yes", Reason: "yes"},
		{Pod: "ns/colon", Reason: "key: value # not a comment", Summary: "- not a list"},
		{Pod: "ns/html", Reason: "<b>&amp;</b> \u2028 \"quoted\" \\ back\nslash\ttab"},
		{Pod: "ns/long", Reason: long, Nodes: []nodeVerdict{{Node: "n", Reasons: []string{long, ""}, Explanation: &allocator.Explanation{}}}},
		{Pod: "ns/empty"},
	}
	cases := map[string][]podVerdict{"none": nil, "one": verdicts[:1], "the test clusters' pods": verdicts, "odd strings": odd}
	for name, items := range cases {
		for _, format := range []string{"yaml", "json"} {
			var whole, streamed bytes.Buffer
			all := make([]podVerdict, 0, len(items))
			all = append(all, items...)
			if err := (&env{stdout: &whole, output: format}).encode(map[string]any{"pods": all}); err != nil {
				t.Fatal(err)
			}
			enc := (&env{stdout: &streamed, output: format}).list("pods")
			for _, v := range items {
				if err := enc.add(v); err != nil {
					t.Fatal(err)
				}
			}
			if err := enc.end(); err != nil {
				t.Fatal(err)
			}
			if whole.String() != streamed.String() {
				t.Errorf("%s, -o %s: written item by item:\n%s\nwhole:\n%s", name, format, streamed.String(), whole.String())
			}
		}
	}
}

// hookedWriter is a stdout that runs hook once, after the first write that names default/fits
// and not default/fits-too.
type hookedWriter struct {
	bytes.Buffer
	hook func()
}

func (w *hookedWriter) Write(p []byte) (int, error) {
	n, err := w.Buffer.Write(p)
	if w.hook != nil && bytes.Contains(p, []byte("default/fits")) && !bytes.Contains(p, []byte("default/fits-too")) {
		w.hook()
		w.hook = nil
	}
	return n, err
}

// TestExplainWritesEachPodBeforeTheNext: explain writes a pod's answer before it decides the next
// pod, so that it keeps one pod's answer at a time (on 1,000 nodes every pod's answers on every node
// were 4 GB before the first line). The cluster changes once default/fits's answer is written:
// node-c's devices go. default/fits and default/fits-too, the last two pods, each fit only on node-c
// (TestExplainEveryPendingPod), so fits-too, decided after fits was written, fits nowhere; the
// answers are in the order of the pods, as before.
func TestExplainWritesEachPodBeforeTheNext(t *testing.T) {
	for _, format := range []string{"text", "yaml", "json"} {
		t.Run(format, func(t *testing.T) {
			c := loadCluster(t, reasons)
			var order []string
			for _, p := range c.pending {
				order = append(order, p.Namespace+"/"+p.Name)
			}
			if !slices.Equal(order[len(order)-2:], []string{"default/fits", "default/fits-too"}) {
				t.Fatalf("pending pods in the order %v, want default/fits and default/fits-too last", order)
			}
			out := &hookedWriter{hook: func() {
				if err := c.snap.DeleteSlice("node-c-gpu.example.com"); err != nil {
					t.Fatal(err)
				}
			}}
			code, err := explainPods(context.Background(), &env{stdout: out, output: format, cluster: c}, c.pending)
			if code != exitNotFit || err != nil {
				t.Fatalf("exit %d, %v", code, err)
			}
			var got []podVerdict
			if format == "text" {
				for _, answer := range strings.Split(out.String(), "\nPod ") {
					name, rest, _ := strings.Cut(strings.TrimPrefix(answer, "Pod "), " ")
					got = append(got, podVerdict{Pod: name, Fits: strings.HasPrefix(rest, "fits on node")})
				}
				if summary := "\n1 of 11 pending pods fit, 10 cannot be scheduled\n"; !strings.HasSuffix(out.String(), summary) {
					t.Errorf("output does not end with %q:\n%s", summary, out)
				}
			} else {
				var doc struct {
					Pods []podVerdict `json:"pods"`
				}
				if err := yaml.UnmarshalStrict(out.Bytes(), &doc); err != nil {
					t.Fatalf("%v\n%s", err, out)
				}
				got = doc.Pods
			}
			var names, fit []string
			for _, v := range got {
				names = append(names, v.Pod)
				if v.Fits {
					fit = append(fit, v.Pod)
				}
			}
			if !slices.Equal(names, order) || !slices.Equal(fit, []string{"default/fits"}) {
				t.Errorf("answers for %v, fitting %v; want answers for %v, only default/fits fitting:\n%s", names, fit, order, out)
			}
		})
	}
}
