//go:build !race

package allocator_test

// raceDetector is true in a test binary built with -race (see race_test.go).
const raceDetector = false
