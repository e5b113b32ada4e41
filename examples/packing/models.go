package main

import (
	"cmp"
	"slices"
	"strings"

	"github.com/dralloc/dralloc/allocator/headroom/trace"
)

// modelUse is, for one GPU model, how the end of a replay left its GPUs: a diagnostic for the lists
// whose tasks name the models they accept (gpu_spec), where a model that only some tasks accept is
// scarce and a task that accepts others may take it from them.
type modelUse struct {
	Model string  `json:"model"`
	GPUs  int     `json:"gpus"`
	Held  float64 `json:"held"`
	// HeldByFlexible is what tasks hold that accept another model too (or any model).
	HeldByFlexible float64 `json:"held_by_flexible"`
	// FailedOnly is the GPUs asked for by the tasks that failed and accept this model alone.
	FailedOnly float64 `json:"failed_only"`
}

// modelUses is the diagnostic at the end of a replay; nil when no task names models.
func modelUses(tr *trace.Trace, arrivals []trace.Arrival) []modelUse {
	if !slices.ContainsFunc(tr.Tasks, func(t trace.Task) bool { return t.Models != nil }) {
		return nil
	}
	byName := map[string]*modelUse{}
	nodeModel := make(map[string]string, len(tr.Nodes))
	for _, n := range tr.Nodes {
		if n.GPUs == 0 {
			continue
		}
		nodeModel[n.Name] = n.Model
		u := byName[n.Model]
		if u == nil {
			u = &modelUse{Model: n.Model}
			byName[n.Model] = u
		}
		u.GPUs += n.GPUs
	}
	for _, a := range arrivals {
		t := tr.Tasks[a.Task]
		if t.GPU() == 0 {
			continue
		}
		if a.Node == "" {
			if ms := distinct(t.Models); len(ms) == 1 && byName[ms[0]] != nil {
				byName[ms[0]].FailedOnly += t.GPU()
			}
			continue
		}
		u := byName[nodeModel[a.Node]]
		if u == nil {
			continue
		}
		u.Held += t.GPU()
		if ms := distinct(t.Models); len(ms) != 1 {
			u.HeldByFlexible += t.GPU()
		}
	}
	out := make([]modelUse, 0, len(byName))
	for _, u := range byName {
		out = append(out, *u)
	}
	slices.SortFunc(out, func(a, b modelUse) int { return cmp.Compare(a.Model, b.Model) })
	return out
}

// distinct is the models without repeats (the trace writes "V100M16|V100M32|V100M32").
func distinct(ms []string) []string {
	out := slices.Clone(ms)
	slices.SortFunc(out, strings.Compare)
	return slices.Compact(out)
}
