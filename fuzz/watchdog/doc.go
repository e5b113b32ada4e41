// Package watchdog bounds the time one input of a Go fuzz target may take, so that a slow input is
// reported like a crash, with the input, instead of stalling the fuzzer.
//
// Every fuzz target of dralloc runs its body through [Run]. The body gets a context that ends after
// [Limit]; a body that returns later fails the test, naming the input; one that has not returned after
// twice the limit (a loop that ignores the context) crashes the process with the input, which the fuzzing
// engine records in testdata/fuzz like any crasher.
//
// Imports: only the standard library (testing), so that every package's tests, leaves included, can use it.
package watchdog
