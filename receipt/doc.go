// Package receipt owns the record of runs: one JSON line per run (a
// Receipt) appended to the user's receipts file
// ($XDG_STATE_HOME/wrun/receipts.jsonl), its rotation, and reading it back.
//
// A receipt is the user's record, not the child's: the file is created
// 0600 in a directory wrun hides from every sandbox (policy.Host.Records),
// and it is written after the command ended, never on the launch path.
// Each receipt is one write(2) to a descriptor opened O_APPEND, so
// concurrent runs append whole lines that never interleave; nothing is
// fsynced. The schema is receipt/schema/receipt.v3.json.
package receipt
