// Package crashtest holds the crash test of the run queue (crash_test.go):
// a server in a child process is killed with SIGKILL while it runs graphs,
// restarted on the same SQLite file, and checked for lost, stuck or
// duplicated work. The package has no code besides its tests.
package crashtest
