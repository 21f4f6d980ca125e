package access

import (
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// Entry rules: one name in a read-only directory (a linked worktree's
// branch ref and its lock file in the common dir's refs/heads), which the
// mediation performs. The other names there stay refused, a hard link of
// another ref to the entry's name would gain its rights, and without the
// mediation an Entry rule is only a rule on the file.
func TestCheckEntry(t *testing.T) {
	const heads = "/srv/main/.git/refs/heads"
	entries := []policy.Rule{
		{Path: heads + "/wt", Access: policy.ReadFile | policy.WriteExisting, Entry: true},
		{Path: heads + "/wt.lock", Access: policy.ReadFile | policy.WriteExisting, Entry: true},
	}
	exact := Platform{Protection: ProtectExact, Entries: true}
	checkRows(t, []row{
		{name: "create the lock", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpCreate, Path: heads + "/wt.lock", Rights: r | w}},
		{name: "replace the ref with the lock", grant: "write", pf: exact, extra: entries,
			op: Op{Kind: OpRename, Path: heads + "/wt.lock", Dest: heads + "/wt", Replace: true}},
		{name: "remove the lock", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpUnlink, Path: heads + "/wt.lock"}},
		{name: "write the ref in place", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpOpen, Path: heads + "/wt", Rights: w}},
		{name: "control: lock another branch", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpCreate, Path: heads + "/main.lock", Rights: r | w},
			want: heads + "/main.lock make_reg <- no-rule /"},
		{name: "control: write another branch", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpOpen, Path: heads + "/main", Rights: w},
			want: heads + "/main write_file <- no-rule /"},
		{name: "control: move the lock over another branch", grant: "write", pf: exact, extra: entries,
			op:   Op{Kind: OpRename, Path: heads + "/wt.lock", Dest: heads + "/main", Replace: true},
			want: heads + "/main remove_file <- no-rule /; " + heads + "/main make_reg <- no-rule /"},
		{name: "control: remove another branch", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpUnlink, Path: heads + "/main"},
			want: heads + "/main remove_file <- no-rule /"},
		{name: "control: a symbolic link as the lock", grant: "write", pf: exact, extra: entries, op: Op{Kind: OpSymlink, Path: heads + "/wt.lock"},
			want: heads + "/wt.lock make_sym <- no-rule /"},
		{name: "control: another branch linked as the lock gains its rights", grant: "write", pf: exact, extra: entries,
			op:   Op{Kind: OpLink, Path: heads + "/main", Dest: heads + "/wt.lock"},
			want: heads + "/wt.lock refer (would gain rights (write_file,truncate)) <- refer-gain " + heads + "/wt.lock"},
		{name: "control: without the mediation the name is the directory's", grant: "write", pf: mounted, extra: entries,
			op: Op{Kind: OpCreate, Path: heads + "/wt.lock", Rights: r | w}, want: heads + "/wt.lock make_reg <- no-rule /"},
	})
}
