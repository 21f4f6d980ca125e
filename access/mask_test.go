package access

import (
	"testing"

	"github.com/wrun-dev/wrun/policy"
)

// masked is the stage's platform: protected paths mounted, hidden paths
// without a rule beneath them masked.
var masked = Platform{Protection: ProtectExact, MaskHidden: true}

// TestCheckMasked: a masked hidden path is denied whole, listing
// included, with the hidden path as the cause; the directories above it
// keep their rights (nothing is carved); a hidden path a rule reaches into
// (/dev, with /dev/null) stays carved; the mask cannot be removed.
func TestCheckMasked(t *testing.T) {
	checkRows(t, []row{
		{name: "read a masked credential store", grant: "full", pf: masked, op: Op{Kind: OpOpen, Path: home + "/.ssh/id_ed25519"},
			want: home + "/.ssh/id_ed25519 read_file <- hole " + home + "/.ssh"},
		{name: "list a masked credential store", grant: "full", pf: masked, op: Op{Kind: OpOpen, Path: home + "/.ssh", Dir: true},
			want: home + "/.ssh read_dir <- hole " + home + "/.ssh"},
		{name: "control: list a carved credential store", grant: "full", op: Op{Kind: OpOpen, Path: home + "/.ssh", Dir: true}},
		{name: "read a masked file", grant: "inspect", pf: masked, op: Op{Kind: OpOpen, Path: home + "/.cargo/credentials.toml"},
			want: home + "/.cargo/credentials.toml read_file <- hole " + home + "/.cargo/credentials.toml"},
		{name: "create beside a masked file", grant: "full", pf: masked, extra: []policy.Rule{{Path: home + "/.cargo", Access: policy.ReadWrite}},
			op: Op{Kind: OpCreate, Path: home + "/.cargo/new"}},
		{name: "control: create beside a carved file", grant: "full", extra: []policy.Rule{{Path: home + "/.cargo", Access: policy.ReadWrite}},
			op: Op{Kind: OpCreate, Path: home + "/.cargo/new"}, want: home + "/.cargo/new make_reg <- carved " + home + "/.cargo/credentials.toml"},
		{name: "remove a masked file", grant: "full", pf: masked, extra: []policy.Rule{{Path: home + "/.cargo", Access: policy.ReadWrite}},
			op:   Op{Kind: OpUnlink, Path: home + "/.cargo/credentials.toml"},
			want: home + "/.cargo/credentials.toml remove_file (mount point) <- hole " + home + "/.cargo/credentials.toml"},
		{name: "a device stays carved", grant: "full", pf: masked, op: Op{Kind: OpOpen, Path: "/dev/sda", Rights: w},
			want: "/dev/sda write_file <- hole /dev"},
		{name: "a device with a rule", grant: "full", pf: masked, op: Op{Kind: OpOpen, Path: "/dev/null", Rights: w | r}},
	})
}
