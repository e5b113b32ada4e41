package allocator

import "github.com/dralloc/dralloc/taints"

// TaintRules returns the DeviceTaintRules in force, compiled as the allocator applies them: a device's
// effective taints are [taints.Evaluator.Taints] of it (its own, then the rules'; a nil Evaluator gives
// its own). The Evaluator is replaced, never changed, when a rule is added, updated or deleted, so code
// that derives values from it may keep them while the pointer stays. nil when there are no rules.
func (s *Snapshot) TaintRules() *taints.Evaluator {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.st.taints
}
