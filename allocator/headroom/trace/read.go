package trace

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Node is one row of a node list (openb_node_list_gpu_node.csv): a node with CPUMilli thousandths of a
// CPU, MemoryMiB of memory and GPUs GPUs of one Model.
type Node struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int
	// Model is the GPU model ("T4", "V100M32"; "G1" to "G3" are models the trace does not disclose);
	// empty for a node without GPUs.
	Model string
}

// Task is one row of a pod list (openb_pod_list_*.csv): a pod asking for CPUMilli thousandths of a CPU,
// MemoryMiB of memory and GPUs GPUs; a task with one GPU and GPUMilli below 1000 asks for that many
// thousandths of one GPU, shared with other tasks.
type Task struct {
	Name      string
	CPUMilli  int64
	MemoryMiB int64
	GPUs      int64
	GPUMilli  int64
	// Models are the GPU models the task accepts (gpu_spec, "V100M16|V100M32"); nil means any.
	Models []string
}

// GPU is what the task asks of the cluster's GPU capacity, in GPUs: GPUs for whole GPUs, GPUMilli/1000
// for a share.
func (t Task) GPU() float64 {
	if t.Shared() {
		return float64(t.GPUMilli) / 1000
	}
	return float64(t.GPUs)
}

// Shared tells whether the task asks for a share of one GPU rather than whole GPUs.
func (t Task) Shared() bool { return t.GPUs == 1 && t.GPUMilli < 1000 }

// ReadOptions bound what [ReadNodes] and [ReadTasks] accept.
type ReadOptions struct {
	// MaxRows is the most data rows read; more is an error. 0 means DefaultMaxRows.
	MaxRows int
	// MaxGPUs is the most GPUs a node may have or a task may ask for. 0 means DefaultMaxGPUs.
	MaxGPUs int
	// MaxRowBytes is the most bytes a row may have, its line ending included (a quoted field may span
	// lines: they count together); a longer row is an error naming it, found without reading more of the
	// row than this. 0 means DefaultMaxRowBytes.
	MaxRowBytes int
}

const (
	// DefaultMaxRows is ReadOptions.MaxRows when unset: ten times the longest list of the trace.
	DefaultMaxRows = 100_000
	// DefaultMaxGPUs is ReadOptions.MaxGPUs when unset (the trace's nodes have at most 8).
	DefaultMaxGPUs = 64
	// DefaultMaxRowBytes is ReadOptions.MaxRowBytes when unset: the trace's rows have less than 1 KiB.
	DefaultMaxRowBytes = 64 << 10
)

// ErrInput is wrapped by every error about the content of a file.
var ErrInput = errors.New("invalid trace")

func (o ReadOptions) maxRows() int {
	if o.MaxRows > 0 {
		return o.MaxRows
	}
	return DefaultMaxRows
}

func (o ReadOptions) maxRowBytes() int64 {
	if o.MaxRowBytes > 0 {
		return int64(o.MaxRowBytes)
	}
	return DefaultMaxRowBytes
}

func (o ReadOptions) maxGPUs() int64 {
	if o.MaxGPUs > 0 {
		return int64(o.MaxGPUs)
	}
	return DefaultMaxGPUs
}

// table reads a CSV file with a header row; file names it in errors.
type table struct {
	file string
	r    *csv.Reader
	in   *rowLimit
	cols map[string]int
	rec  []string
	row  int // the file's row of rec, the header being row 1
}

// errRowTooLong ends the read of a row longer than the limit (see rowLimit).
var errRowTooLong = errors.New("row too long")

// rowLimit hands the CSV reader no more of a row than max bytes (and the byte that shows it longer),
// so that a row that never ends costs a bounded read instead of all memory: encoding/csv keeps the
// whole row. The CSV reader asks for more only while the row it is in goes on (bufio fills its buffer
// when the buffered bytes hold no line ending), so when it asks, every byte handed over since start
// belongs to that row.
type rowLimit struct {
	r     io.Reader
	max   int64
	read  int64 // bytes handed to the CSV reader
	start int64 // where the row being read begins (csv.Reader.InputOffset before it)
}

func (l *rowLimit) Read(p []byte) (int, error) {
	// One byte past the limit tells a row of max bytes that ends at the end of the file from a longer
	// one.
	room := max(l.start+l.max-l.read, 1)
	if int64(len(p)) > room {
		p = p[:room]
	}
	n, err := l.r.Read(p)
	l.read += int64(n)
	if l.read-l.start > l.max {
		return 0, errRowTooLong
	}
	return n, err
}

func newTable(file string, r io.Reader, required []string, maxRowBytes int64) (*table, error) {
	in := &rowLimit{r: r, max: maxRowBytes}
	cr := csv.NewReader(in)
	cr.ReuseRecord = true
	cr.FieldsPerRecord = 0 // every row as long as the header
	t := &table{file: file, r: cr, in: in, cols: map[string]int{}}
	header, err := t.read()
	if err == io.EOF {
		return nil, fmt.Errorf("%s: %w: no header row", file, ErrInput)
	}
	if err != nil {
		return nil, err
	}
	for i, h := range header {
		t.cols[strings.TrimSpace(strings.TrimPrefix(h, "\ufeff"))] = i
	}
	for _, c := range required {
		if _, ok := t.cols[c]; !ok {
			return nil, fmt.Errorf("%s: %w: header: no column %s", file, ErrInput, c)
		}
	}
	return t, nil
}

// read reads the next row, t.row+1, and counts it; io.EOF at the end of the file.
func (t *table) read() ([]string, error) {
	t.in.start = t.r.InputOffset()
	rec, err := t.r.Read()
	if err == io.EOF {
		return nil, err
	}
	t.row++
	switch {
	case errors.Is(err, errRowTooLong):
		return nil, fmt.Errorf("%s: %w: row %d: longer than %d bytes", t.file, ErrInput, t.row, t.in.max)
	case err != nil:
		return nil, fmt.Errorf("%s: %w: %w", t.file, ErrInput, err)
	}
	return rec, nil
}

// next reads the next row; false at the end of the file.
func (t *table) next(max int) (bool, error) {
	rec, err := t.read()
	if err == io.EOF {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	if t.row-1 > max {
		return false, fmt.Errorf("%s: %w: more than %d rows", t.file, ErrInput, max)
	}
	t.rec = rec
	return true, nil
}

func (t *table) errorf(col, format string, args ...any) error {
	return fmt.Errorf("%s: %w: row %d: column %s: %s", t.file, ErrInput, t.row, col, fmt.Sprintf(format, args...))
}

// str is the column's value; "" where the file has no such column.
func (t *table) str(col string) string {
	i, ok := t.cols[col]
	if !ok {
		return ""
	}
	return strings.TrimSpace(t.rec[i])
}

// int reads a whole number in [0, max].
func (t *table) int(col string, max int64) (int64, error) {
	s := t.str(col)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, t.errorf(col, "%q is not a whole number", s)
	}
	if n < 0 || n > max {
		return 0, t.errorf(col, "%d is outside [0, %d]", n, max)
	}
	return n, nil
}

// absent is how the trace writes a missing value (pandas' NaN).
func absent(s string) bool { return s == "" || strings.EqualFold(s, "nan") }

// Quantities beyond these are not a real node or pod; bounding them keeps the DRA quantities exact.
const (
	maxCPUMilli  = 1 << 40
	maxMemoryMiB = 1 << 40
	maxTaskName  = 200
)

// ReadNodes reads a node list: a header row with at least the columns sn, cpu_milli, memory_mib, gpu
// and model, then one node per row. file names the input in errors, which name the row (the header is
// row 1) and column of bad input and wrap [ErrInput]. Node names must be unique.
func ReadNodes(file string, r io.Reader, opts ReadOptions) ([]Node, error) {
	t, err := newTable(file, r, []string{"sn", "cpu_milli", "memory_mib", "gpu", "model"}, opts.maxRowBytes())
	if err != nil {
		return nil, err
	}
	var nodes []Node
	seen := map[string]int{}
	for {
		ok, err := t.next(opts.maxRows())
		if err != nil {
			return nil, err
		}
		if !ok {
			return nodes, nil
		}
		n := Node{Name: t.str("sn")}
		if n.Name == "" {
			return nil, t.errorf("sn", "must not be empty")
		}
		if errs := validation.IsDNS1123Subdomain(n.Name); len(errs) > 0 {
			return nil, t.errorf("sn", "%q is not a node name: %s", n.Name, errs[0])
		}
		if prev, dup := seen[n.Name]; dup {
			return nil, t.errorf("sn", "node %s is also row %d", n.Name, prev)
		}
		seen[n.Name] = t.row
		if n.CPUMilli, err = t.int("cpu_milli", maxCPUMilli); err != nil {
			return nil, err
		}
		if n.MemoryMiB, err = t.int("memory_mib", maxMemoryMiB); err != nil {
			return nil, err
		}
		gpus, err := t.int("gpu", opts.maxGPUs())
		if err != nil {
			return nil, err
		}
		n.GPUs = int(gpus)
		if m := t.str("model"); !absent(m) {
			n.Model = m
		}
		if n.GPUs > 0 && n.Model == "" {
			return nil, t.errorf("model", "node %s has %d GPUs but no model", n.Name, n.GPUs)
		}
		nodes = append(nodes, n)
	}
}

// ReadTasks reads a pod list: a header row with at least the columns name, cpu_milli, memory_mib,
// num_gpu and gpu_milli (gpu_spec is optional), then one task per row, in arrival order. A task asks
// for num_gpu whole GPUs when gpu_milli is 1000, for a share of gpu_milli thousandths of one GPU when
// num_gpu is 1 and gpu_milli less, for none when num_gpu is 0 (gpu_milli must be 0 then). Errors are
// as [ReadNodes]'s.
func ReadTasks(file string, r io.Reader, opts ReadOptions) ([]Task, error) {
	t, err := newTable(file, r, []string{"name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli"}, opts.maxRowBytes())
	if err != nil {
		return nil, err
	}
	var tasks []Task
	for {
		ok, err := t.next(opts.maxRows())
		if err != nil {
			return nil, err
		}
		if !ok {
			return tasks, nil
		}
		task := Task{Name: t.str("name")}
		if task.Name == "" {
			return nil, t.errorf("name", "must not be empty")
		}
		// Pods are named after the task and the arrival (name-<n>), so the name leaves room for it.
		if errs := validation.IsDNS1123Subdomain(task.Name); len(errs) > 0 || len(task.Name) > maxTaskName {
			return nil, t.errorf("name", "%q is not a pod name of at most %d characters", task.Name, maxTaskName)
		}
		if task.CPUMilli, err = t.int("cpu_milli", maxCPUMilli); err != nil {
			return nil, err
		}
		if task.MemoryMiB, err = t.int("memory_mib", maxMemoryMiB); err != nil {
			return nil, err
		}
		if task.GPUs, err = t.int("num_gpu", opts.maxGPUs()); err != nil {
			return nil, err
		}
		if task.GPUMilli, err = t.int("gpu_milli", 1000); err != nil {
			return nil, err
		}
		switch {
		case task.GPUs == 0 && task.GPUMilli != 0:
			return nil, t.errorf("gpu_milli", "%d for a task without GPUs (num_gpu 0)", task.GPUMilli)
		case task.GPUs > 0 && task.GPUMilli == 0:
			return nil, t.errorf("gpu_milli", "0 for a task with %d GPUs", task.GPUs)
		case task.GPUs > 1 && task.GPUMilli != 1000:
			return nil, t.errorf("gpu_milli", "%d for a task with %d GPUs: only one GPU can be shared", task.GPUMilli, task.GPUs)
		}
		if spec := t.str("gpu_spec"); !absent(spec) {
			if task.GPUs == 0 {
				return nil, t.errorf("gpu_spec", "%q for a task without GPUs", spec)
			}
			for _, m := range strings.Split(spec, "|") {
				if m = strings.TrimSpace(m); m == "" {
					return nil, t.errorf("gpu_spec", "%q has an empty model", spec)
				}
				task.Models = append(task.Models, m)
			}
		}
		tasks = append(tasks, task)
	}
}

// Open reads a trace from two files: a node list ([ReadNodes]) and a pod list ([ReadTasks]).
func Open(nodesFile, podsFile string, opts ReadOptions) (*Trace, error) {
	nodes, err := readFile(nodesFile, opts, ReadNodes)
	if err != nil {
		return nil, err
	}
	tasks, err := readFile(podsFile, opts, ReadTasks)
	if err != nil {
		return nil, err
	}
	return &Trace{Nodes: nodes, Tasks: tasks}, nil
}

func readFile[T any](file string, opts ReadOptions, read func(string, io.Reader, ReadOptions) ([]T, error)) ([]T, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return read(file, f, opts)
}
