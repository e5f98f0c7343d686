package driver

import (
	"encoding/json"

	"github.com/graphserver/graphserver/record"
)

// ThreadSummary is what a finished run or a state update writes onto its
// thread: the latest checkpoint's values, interrupts and the derived status.
// Values and Error, when set, are JSON the Server encoded (json.Marshal's
// output): drivers store them without checking them again, which would
// cost a pass over the whole state in the transaction that ends a run
// (on SQLite's single writer).
type ThreadSummary struct {
	Status     string
	Values     json.RawMessage
	Interrupts map[string][]record.Interrupt
	Error      json.RawMessage
}
