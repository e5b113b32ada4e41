//go:build race

package allocator_test

// raceDetector is true in a test binary built with -race: sync.Pool then drops pooled objects at
// random, so a call's scratch is sometimes allocated afresh and allocation counts say nothing.
const raceDetector = true
