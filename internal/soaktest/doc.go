// Package soaktest holds the load and soak test of run streaming
// (soak_test.go): hundreds of concurrent SSE streams over loopback HTTP,
// with disconnects resumed by Last-Event-ID, joins and cancels, checked for
// lost or duplicated events and for goroutines and file descriptors that do
// not return to their baseline. The package has no code besides its tests.
package soaktest
