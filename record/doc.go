// Package record holds the types that package graphserver and its storage
// drivers share: the resources (Assistant, Thread, Run, Cron, Item), their
// JSON objects (Object, Metadata), the searches and patches a driver applies
// (AssistantSearch, ThreadPatch, RunSearch, ...), the access-control Filter,
// the observer events, and Error with its codes.
//
// It is a leaf, as river's rivertype is: it imports no graphserver package,
// so that package driver can use these types while package graphserver
// imports driver. Applications need not import it: package graphserver
// names every type here with an alias (graphserver.Thread is record.Thread)
// and re-declares the error codes.
package record
