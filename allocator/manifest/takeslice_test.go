package manifest

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	resourceapi "k8s.io/api/resource/v1"
	"pgregory.net/rapid"
)

// takenSlices decodes input with Options.TakeSlice and returns the objects and what was handed over,
// each slice as JSON with its source.
func takenSlices(input string, opts Options) (*Objects, []string, error) {
	var taken []string
	opts.TakeSlice = func(s *resourceapi.ResourceSlice, src Source) error {
		data, err := json.Marshal(s)
		if err != nil {
			return err
		}
		taken = append(taken, fmt.Sprintf("%s @ %s true", data, src))
		return nil
	}
	objs, err := Decode(strings.NewReader(input), "input", opts)
	return objs, taken, err
}

// TestPropTakeSliceHandsOverWhatSlicesHold: decoding with Options.TakeSlice hands over, in order and
// with their sources, exactly the slices Objects.Slices holds without it, keeps none of them, reads
// every other object as before and fails as before (generated Lists of valid and invalid items, in
// JSON and YAML, several documents).
func TestPropTakeSliceHandsOverWhatSlicesHold(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var docs []string
		for d := range rapid.IntRange(1, 3).Draw(t, "documents") {
			items := rapid.SliceOfN(rapid.SampledFrom(listItems), 0, 8).Draw(t, fmt.Sprintf("items%d", d))
			if rapid.Bool().Draw(t, "yaml") {
				doc := "apiVersion: v1\nitems:\n"
				for _, item := range items {
					doc += "- " + item + "\n"
				}
				docs = append(docs, doc+"kind: List\n")
				continue
			}
			docs = append(docs, `{"apiVersion":"v1","kind":"List","items":[`+strings.Join(items, ",")+"]}")
		}
		input := strings.Join(docs, "\n")
		if strings.Contains(input, "kind: List\n") {
			input = strings.Join(docs, "\n---\n")
		}
		opts := Options{SkipUnknown: rapid.Bool().Draw(t, "skipUnknown")}
		want, werr := Decode(strings.NewReader(input), "input", opts)
		got, taken, gerr := takenSlices(input, opts)
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Fatalf("%s\nwith TakeSlice: %v\nwithout: %v", input, gerr, werr)
		}
		if werr != nil {
			return
		}
		if len(got.Slices) != 0 {
			t.Fatalf("Objects.Slices kept %d slices", len(got.Slices))
		}
		var held []string
		for _, line := range strings.SplitAfter(dumpObjects(&Objects{Slices: want.Slices, sources: want.sources}), "\n") {
			if line != "" {
				held = append(held, strings.TrimSuffix(line, "\n"))
			}
		}
		if g, w := strings.Join(taken, "\n"), strings.Join(held, "\n"); g != w {
			t.Fatalf("%s\nhanded over:\n%s\nheld without TakeSlice:\n%s", input, g, w)
		}
		want.Slices = nil
		if g, w := dumpObjects(got), dumpObjects(want); g != w {
			t.Fatalf("%s\nthe other objects with TakeSlice:\n%s\nwithout:\n%s", input, g, w)
		}
	})
}

// TestTakeSliceHostile: a List cut short or over the limits hands over no slice (every limit of
// the whole document is checked before its first item is decoded), a slice read twice is handed
// over twice, and an error of TakeSlice stops reading and is reported naming the slice.
func TestTakeSliceHostile(t *testing.T) {
	slice := func(name, node string) string {
		return `{"apiVersion":"resource.k8s.io/v1","kind":"ResourceSlice","metadata":{"name":"` + name + `"},"spec":{"driver":"d.example.com","nodeName":"` +
			node + `","pool":{"name":"` + node + `","resourceSliceCount":1},"devices":[{"name":"d0"}]}}`
	}
	list := func(items ...string) string {
		return `{"apiVersion":"v1","kind":"List","items":[` + strings.Join(items, ",") + `]}`
	}
	yamlList := func(items ...string) string {
		doc := "apiVersion: v1\nkind: List\nitems:\n"
		for _, item := range items {
			doc += "- " + item + "\n"
		}
		return doc
	}
	many := make([]string, 2000)
	for i := range many {
		many[i] = slice(fmt.Sprintf("s%d", i), fmt.Sprintf("n%d", i))
	}
	for _, tc := range []struct {
		name, input string
		opts        Options
		is          error
		want        string // in the error
		taken       int
	}{
		{"a JSON List cut in an item", list(slice("a", "n1"), slice("b", "n2"))[:300], Options{}, ErrDecode, "input: document 1: cannot decode", 0},
		{"a YAML List cut in an item", yamlList(slice("a", "n1"), slice("b", "n2"))[:350], Options{}, ErrDecode, "input: document 1: cannot decode", 0},
		{"a JSON List over MaxBytes", list(many...), Options{MaxBytes: 100000}, ErrTooLarge, "input: too large", 0},
		{"a YAML List over MaxBytes", yamlList(many...), Options{MaxBytes: 100000}, ErrTooLarge, "input: too large", 0},
		{"a bad item after the slices", list(slice("a", "n1"), `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"bogus":1}}`), Options{}, ErrUnknownField, "input: document 1, item 2: Pod p: spec.bogus: unknown field", 1},
		{"an invalid slice", list(slice("a", "n1"), slice("b", "N 2")), Options{}, ErrInvalid, "input: document 1, item 2: ResourceSlice b: spec.pool.name: invalid object", 1},
		{"a slice read twice", list(slice("a", "n1"), slice("a", "n2")), Options{}, nil, "", 2},
		{"many slices", yamlList(many...), Options{}, nil, "", len(many)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			objs, taken, err := takenSlices(tc.input, tc.opts)
			if len(taken) != tc.taken {
				t.Errorf("%d slices handed over, want %d", len(taken), tc.taken)
			}
			if tc.is == nil {
				if err != nil || len(objs.Slices) != 0 {
					t.Fatalf("got %v with %d slices kept, want no error and none kept", err, len(objs.Slices))
				}
				return
			}
			var e *Error
			if !errors.Is(err, tc.is) || !errors.As(err, &e) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want an *Error with %q wrapping %v", err, tc.want, tc.is)
			}
		})
	}

	t.Run("an error of TakeSlice", func(t *testing.T) {
		full := errors.New("no room for another node")
		var names []string
		opts := Options{TakeSlice: func(s *resourceapi.ResourceSlice, _ Source) error {
			names = append(names, s.Name)
			if len(names) == 2 {
				return full
			}
			return nil
		}}
		_, err := Decode(strings.NewReader(yamlList(slice("a", "n1"), slice("b", "n2"), slice("c", "n3"))), "input", opts)
		want := "input: document 1, item 2: ResourceSlice b: invalid object: no room for another node"
		if !errors.Is(err, full) || !errors.Is(err, ErrInvalid) || err.Error() != want {
			t.Fatalf("got %v, want %q wrapping the error and ErrInvalid", err, want)
		}
		if strings.Join(names, ",") != "a,b" {
			t.Fatalf("handed over %v, want a and b only", names)
		}
	})
}
