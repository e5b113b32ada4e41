package trace_test

import (
	"math"
	"strconv"
	"strings"
	"testing"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// typicalTasks: 10 tasks; without GPUs 4 of 2 CPUs (two of them with more memory) and 1 of no CPU;
// 3 of one GPU with 8 CPUs; 1 share of 500 on a V100M32; 1 of 2 GPUs.
func typicalTasks() *trace.Trace {
	return &trace.Trace{Tasks: []trace.Task{
		{Name: "a", CPUMilli: 2000, MemoryMiB: 1024},
		{Name: "b", CPUMilli: 2000, MemoryMiB: 1024},
		{Name: "c", CPUMilli: 2000, MemoryMiB: 4096},
		{Name: "d", CPUMilli: 2000, MemoryMiB: 4096},
		{Name: "e", CPUMilli: 0, MemoryMiB: 1024},
		{Name: "f", CPUMilli: 8000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 1000},
		{Name: "g", CPUMilli: 8000, MemoryMiB: 2048, GPUs: 1, GPUMilli: 1000},
		{Name: "h", CPUMilli: 8000, MemoryMiB: 4096, GPUs: 1, GPUMilli: 1000},
		{Name: "i", CPUMilli: 4000, MemoryMiB: 1024, GPUs: 1, GPUMilli: 500, Models: []string{"V100M32"}},
		{Name: "j", CPUMilli: 16000, MemoryMiB: 1024, GPUs: 2, GPUMilli: 1000},
	}}
}

func TestTypicalMix(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts trace.TypicalOptions
		want string // name=weight, by decreasing weight
	}{
		{
			name: "the simulator's: without memory, the popular shapes making up 95 % (here all), renormalised",
			want: "no-gpu/cpu-2000=0.4 gpu-1/cpu-8000=0.3 gpu-2/cpu-16000=0.1 gpu-share-500-models-V100M32/cpu-4000=0.1 no-gpu/cpu-100=0.1",
		},
		{
			name: "popularity 70 %: shapes are added until they make up 70 % of the tasks",
			opts: trace.TypicalOptions{Popularity: 0.7},
			want: "no-gpu/cpu-2000=0.571 gpu-1/cpu-8000=0.429",
		},
		{
			name: "popularity 75 %: one more shape, the first by name among those of equal count",
			opts: trace.TypicalOptions{Popularity: 0.75},
			want: "no-gpu/cpu-2000=0.5 gpu-1/cpu-8000=0.375 gpu-2/cpu-16000=0.125",
		},
		{
			name: "with memory, shapes that differ in memory are apart",
			opts: trace.TypicalOptions{Popularity: 1, Memory: true},
			want: "no-gpu/cpu-2000/mem-1024=0.2 no-gpu/cpu-2000/mem-4096=0.2 gpu-1/cpu-8000/mem-1024=0.1 gpu-1/cpu-8000/mem-2048=0.1 gpu-1/cpu-8000/mem-4096=0.1 gpu-2/cpu-16000/mem-1024=0.1 gpu-share-500-models-V100M32/cpu-4000/mem-1024=0.1 no-gpu/cpu-100/mem-1024=0.1",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mix, err := typicalTasks().TypicalMix(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			sum := 0.0
			for _, s := range mix {
				got = append(got, s.Name+"="+strconv.FormatFloat(math.Round(s.Weight*1000)/1000, 'f', -1, 64))
				sum += s.Weight
			}
			if g := strings.Join(got, " "); g != tc.want {
				t.Errorf("mix:\n got %s\nwant %s", g, tc.want)
			}
			if math.Abs(sum-1) > 1e-9 {
				t.Errorf("weights sum to %v, want 1", sum)
			}
		})
	}
}

func TestTypicalMixShapes(t *testing.T) {
	mix, err := typicalTasks().TypicalMix(trace.TypicalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for i, s := range mix {
		byName[s.Name] = i
	}
	share := mix[byName["gpu-share-500-models-V100M32/cpu-4000"]]
	if len(share.Requests) != 1 || share.Requests[0].Count != 1 || share.Requests[0].Capacity != trace.Shares || share.Requests[0].Amount.Value() != 500 {
		t.Errorf("share shape: requests %+v, want one share of 500", share.Requests)
	}
	if got := share.Requests[0].Attributes[trace.ModelAttribute]; len(got) != 1 || got[0] != "V100M32" {
		t.Errorf("share shape: models %v, want [V100M32]", got)
	}
	if two := mix[byName["gpu-2/cpu-16000"]]; len(two.Requests) != 1 || two.Requests[0].Count != 2 || two.Requests[0].Capacity != "" {
		t.Errorf("two-GPU shape: requests %+v, want 2 whole GPUs", two.Requests)
	}
	cpu := mix[byName["no-gpu/cpu-100"]]
	if len(cpu.Requests) != 0 || cpu.CPU.MilliValue() != 100 || !cpu.Memory.IsZero() {
		t.Errorf("task without CPU: requests %v, CPU %v, memory %v; want none, 100m (kube-scheduler's non-zero default), none", cpu.Requests, &cpu.CPU, &cpu.Memory)
	}
}

func TestTypicalMixErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		tr   *trace.Trace
		opts trace.TypicalOptions
		want string
	}{
		{"popularity above 1", typicalTasks(), trace.TypicalOptions{Popularity: 1.5}, "TypicalOptions.Popularity: 1.5 is outside (0, 1]"},
		{"negative popularity", typicalTasks(), trace.TypicalOptions{Popularity: -0.1}, "TypicalOptions.Popularity: -0.1 is outside (0, 1]"},
		{"NaN popularity", typicalTasks(), trace.TypicalOptions{Popularity: math.NaN()}, "TypicalOptions.Popularity: NaN is outside (0, 1]"},
		{"no GPU task", &trace.Trace{Tasks: []trace.Task{{Name: "a", CPUMilli: 1000}}}, trace.TypicalOptions{}, "no task asks for GPUs"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := tc.tr.TypicalMix(tc.opts)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}
