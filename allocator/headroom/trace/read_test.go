package trace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

const (
	nodeHeader = "sn,cpu_milli,memory_mib,gpu,model\n"
	taskHeader = "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec\n"
)

func TestReadNodesErrors(t *testing.T) {
	for _, tc := range []struct {
		name, in, want string
		opts           trace.ReadOptions
	}{
		{"empty file", "", "nodes.csv: invalid trace: no header row", trace.ReadOptions{}},
		{"missing column", "sn,cpu_milli,memory_mib,gpu\n", "nodes.csv: invalid trace: header: no column model", trace.ReadOptions{}},
		{"not a number", nodeHeader + "n1,64000,262144,2,T4\nn2,64k,262144,2,T4\n", "nodes.csv: invalid trace: row 3: column cpu_milli: \"64k\" is not a whole number", trace.ReadOptions{}},
		{"negative", nodeHeader + "n1,64000,-1,2,T4\n", "nodes.csv: invalid trace: row 2: column memory_mib: -1 is outside [0, 1099511627776]", trace.ReadOptions{}},
		{"too many GPUs", nodeHeader + "n1,64000,262144,65,T4\n", "nodes.csv: invalid trace: row 2: column gpu: 65 is outside [0, 64]", trace.ReadOptions{}},
		{"GPUs without model", nodeHeader + "n1,64000,262144,2,nan\n", "nodes.csv: invalid trace: row 2: column model: node n1 has 2 GPUs but no model", trace.ReadOptions{}},
		{"duplicate", nodeHeader + "n1,64000,262144,2,T4\nn1,64000,262144,2,T4\n", "nodes.csv: invalid trace: row 3: column sn: node n1 is also row 2", trace.ReadOptions{}},
		{"bad name", nodeHeader + "Node_1,64000,262144,2,T4\n", "nodes.csv: invalid trace: row 2: column sn: \"Node_1\" is not a node name", trace.ReadOptions{}},
		{"short row", nodeHeader + "n1,64000,262144,2\n", "nodes.csv: invalid trace: record on line 2: wrong number of fields", trace.ReadOptions{}},
		{"too many rows", nodeHeader + "n1,1,1,0,\nn2,1,1,0,\nn3,1,1,0,\n", "nodes.csv: invalid trace: more than 2 rows", trace.ReadOptions{MaxRows: 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.ReadNodes("nodes.csv", strings.NewReader(tc.in), tc.opts)
			if err == nil || !strings.HasPrefix(err.Error(), tc.want) || !errors.Is(err, trace.ErrInput) {
				t.Errorf("got %v, want an ErrInput starting %q", err, tc.want)
			}
		})
	}
}

func TestReadTasksErrors(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"missing column", "name,cpu_milli,memory_mib,num_gpu\n", "pods.csv: invalid trace: header: no column gpu_milli"},
		{"milli above 1000", taskHeader + "p1,1000,1024,1,1001,\n", "pods.csv: invalid trace: row 2: column gpu_milli: 1001 is outside [0, 1000]"},
		{"milli without GPUs", taskHeader + "p1,1000,1024,0,500,\n", "pods.csv: invalid trace: row 2: column gpu_milli: 500 for a task without GPUs (num_gpu 0)"},
		{"GPUs without milli", taskHeader + "p1,1000,1024,1,0,\n", "pods.csv: invalid trace: row 2: column gpu_milli: 0 for a task with 1 GPUs"},
		{"shares of several GPUs", taskHeader + "p1,1000,1024,2,500,\n", "pods.csv: invalid trace: row 2: column gpu_milli: 500 for a task with 2 GPUs: only one GPU can be shared"},
		{"spec without GPUs", taskHeader + "p1,1000,1024,0,0,T4\n", "pods.csv: invalid trace: row 2: column gpu_spec: \"T4\" for a task without GPUs"},
		{"empty model", taskHeader + "p1,1000,1024,1,1000,T4||V100M16\n", "pods.csv: invalid trace: row 2: column gpu_spec: \"T4||V100M16\" has an empty model"},
		{"empty name", taskHeader + ",1000,1024,1,1000,\n", "pods.csv: invalid trace: row 2: column name: must not be empty"},
		{"bad name", taskHeader + "Pod 1,1000,1024,1,1000,\n", "pods.csv: invalid trace: row 2: column name: \"Pod 1\" is not a pod name of at most 200 characters"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := trace.ReadTasks("pods.csv", strings.NewReader(tc.in), trace.ReadOptions{})
			if err == nil || err.Error() != tc.want || !errors.Is(err, trace.ErrInput) {
				t.Errorf("got %v, want an ErrInput %q", err, tc.want)
			}
		})
	}
}

func TestReadTasks(t *testing.T) {
	in := "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos\n" +
		"p0,88000,327680,8,1000,nan,Burstable\n" +
		"p1,4000,15258,1,220,,BE\n" +
		"p2,16000,32768,1,1000,V100M16|V100M32,LS\n" +
		"p3,2000,4096,0,0,,LS\n"
	tasks, err := trace.ReadTasks("pods.csv", strings.NewReader(in), trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		gpu    float64
		shared bool
		models string
	}{{8, false, ""}, {0.22, true, ""}, {1, false, "V100M16|V100M32"}, {0, false, ""}}
	if len(tasks) != len(want) {
		t.Fatalf("%d tasks, want %d", len(tasks), len(want))
	}
	for i, w := range want {
		task := tasks[i]
		if task.GPU() != w.gpu || task.Shared() != w.shared || strings.Join(task.Models, "|") != w.models {
			t.Errorf("task %s: GPU %v shared %v models %q; want %v %v %q", task.Name, task.GPU(), task.Shared(), task.Models, w.gpu, w.shared, w.models)
		}
	}
}

// TestWholeDefaultTrace: the whole default trace in testdata is what testdata/README.md says it is
// (BenchmarkReplay and examples/packing replay it).
func TestWholeDefaultTrace(t *testing.T) {
	tr, err := trace.Open("testdata/openb_node_list_gpu_node.csv", "testdata/openb_pod_list_default.csv", trace.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	gpuTasks := 0
	for _, task := range tr.Tasks {
		if task.GPU() > 0 {
			gpuTasks++
		}
	}
	if len(tr.Nodes) != 1213 || tr.GPUs() != 6212 || len(tr.Tasks) != 8152 || gpuTasks != 7064 {
		t.Errorf("%d nodes, %d GPUs, %d tasks, %d asking for GPUs; testdata/README.md says 1213, 6212, 8152, 7064",
			len(tr.Nodes), tr.GPUs(), len(tr.Tasks), gpuTasks)
	}
}

// endless is a file that never ends: prefix, then unit repeated forever. It counts the bytes it
// delivers; past stop it fails with errOverread, so that a reader that keeps a whole row in memory
// fails the test instead of the machine.
type endless struct {
	prefix, unit string
	stop         int
	delivered    int
}

var errOverread = errors.New("read far past the row limit")

func (e *endless) Read(p []byte) (int, error) {
	if e.delivered >= e.stop {
		return 0, errOverread
	}
	n := 0
	for n < len(p) && e.delivered+n < e.stop {
		if i := e.delivered + n; i < len(e.prefix) {
			p[n] = e.prefix[i]
		} else {
			p[n] = e.unit[(i-len(e.prefix))%len(e.unit)]
		}
		n++
	}
	e.delivered += n
	return n, nil
}

// A row that never ends (a header, a data row, a quoted field over endless lines, endless empty lines
// before a row) is an error naming the row once the row passed the limit, and the reader has then been
// read no further than the limit and one buffer past the row's start.
func TestReadEndlessRow(t *testing.T) {
	const buffer = 4096 // encoding/csv reads through a bufio.Reader of this size
	read := map[string]func(*endless, trace.ReadOptions) error{
		"nodes.csv": func(e *endless, o trace.ReadOptions) error { _, err := trace.ReadNodes("nodes.csv", e, o); return err },
		"pods.csv":  func(e *endless, o trace.ReadOptions) error { _, err := trace.ReadTasks("pods.csv", e, o); return err },
	}
	for _, tc := range []struct {
		name, file, prefix, unit string
		limit                    int // ReadOptions.MaxRowBytes
		want                     string
	}{
		{name: "endless header", file: "nodes.csv", prefix: "sn,cpu_milli", unit: "x",
			want: "nodes.csv: invalid trace: row 1: longer than 65536 bytes"},
		{name: "endless data row", file: "nodes.csv", prefix: nodeHeader + "n1,64000,262144,2,T4\n", unit: "a",
			want: "nodes.csv: invalid trace: row 3: longer than 65536 bytes"},
		{name: "endless data row with a smaller limit", file: "pods.csv", prefix: taskHeader + "p1,", unit: "1", limit: 100,
			want: "pods.csv: invalid trace: row 2: longer than 100 bytes"},
		{name: "a quoted field over endless short lines", file: "pods.csv", prefix: taskHeader + `p1,1000,1024,1,1000,"T4`, unit: "|T4\n",
			want: "pods.csv: invalid trace: row 2: longer than 65536 bytes"},
		{name: "endless empty lines", file: "nodes.csv", prefix: nodeHeader, unit: "\n",
			want: "nodes.csv: invalid trace: row 2: longer than 65536 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			limit := tc.limit
			if limit == 0 {
				limit = trace.DefaultMaxRowBytes
			}
			e := &endless{prefix: tc.prefix, unit: tc.unit, stop: 64 * (limit + buffer)}
			err := read[tc.file](e, trace.ReadOptions{MaxRowBytes: tc.limit})
			if err == nil || err.Error() != tc.want || !errors.Is(err, trace.ErrInput) {
				t.Errorf("got %v, want an ErrInput %q", err, tc.want)
			}
			// The row starts at the end of the prefix's last whole line.
			rowStart := strings.LastIndex(tc.prefix, "\n") + 1
			if max := rowStart + limit + buffer; e.delivered > max {
				t.Errorf("read %d bytes of an endless row starting at byte %d; want at most %d (the limit %d and a buffer)", e.delivered, rowStart, max, limit)
			}
		})
	}
}

// A row of MaxRowBytes bytes, its line ending included, is read; one byte more is an error. The last
// row of a file needs no line ending.
func TestReadRowLimit(t *testing.T) {
	limit := len(nodeHeader) // the header itself fits exactly
	pad := func(row string, n int) string { return row + strings.Repeat(" ", n-len(row)) }
	for _, tc := range []struct {
		name, in, want string
	}{
		{"a row of the limit", nodeHeader + pad("n1,64000,262144,2,T4", limit-1) + "\n", ""},
		{"a last row of the limit without a line ending", nodeHeader + pad("n1,64000,262144,2,T4", limit), ""},
		{"a row one byte longer", nodeHeader + pad("n1,64000,262144,2,T4", limit) + "\n",
			"nodes.csv: invalid trace: row 2: longer than 34 bytes"},
		{"a last row one byte longer without a line ending", nodeHeader + pad("n1,64000,262144,2,T4", limit+1),
			"nodes.csv: invalid trace: row 2: longer than 34 bytes"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			nodes, err := trace.ReadNodes("nodes.csv", strings.NewReader(tc.in), trace.ReadOptions{MaxRowBytes: limit})
			switch {
			case tc.want == "" && (err != nil || len(nodes) != 1 || nodes[0].Model != "T4"):
				t.Errorf("got %v, %v; want node n1 with model T4", nodes, err)
			case tc.want != "" && (err == nil || err.Error() != tc.want || !errors.Is(err, trace.ErrInput)):
				t.Errorf("got %v, want an ErrInput %q", err, tc.want)
			}
		})
	}
}
