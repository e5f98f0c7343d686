//go:build race

package soaktest

// raceEnabled scales the soak down under the race detector, which slows
// every goroutine several times over.
const raceEnabled = true
