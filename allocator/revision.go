package allocator

// Revision names one content of a snapshot: it changes with every change of the snapshot (objects added,
// updated or deleted, a fork committed), so that a caller may keep what it derived from the snapshot
// until the revision moves. Revisions of different snapshots and forks never compare equal; within one
// snapshot every change adds exactly one to Changes.
type Revision struct {
	state   uint64
	Changes uint64
}

// Revision returns the snapshot's current revision.
func (s *Snapshot) Revision() Revision {
	s.ready()
	s.mu.RLock()
	defer s.mu.RUnlock()
	return Revision{state: s.st.id, Changes: s.st.rev}
}
