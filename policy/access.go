package policy

import (
	"encoding/json"
	"fmt"
	"strings"
)

// Access is a set of file system rights, as fine-grained as the finest
// platform (Landlock) can enforce.
type Access uint64

// The rights. Directory rights (ReadDir, Remove*, Make*, Refer) apply to the
// entries of a directory; file rights apply to files.
const (
	Execute Access = 1 << iota
	WriteFile
	ReadFile
	ReadDir
	RemoveDir
	RemoveFile
	MakeChar
	MakeDir
	MakeReg
	MakeSock
	MakeFifo
	MakeBlock
	MakeSym
	Refer
	Truncate
	IoctlDev
)

// Named sets of rights.
const (
	// Read is reading files and listing directories.
	Read = ReadFile | ReadDir
	// ReadExec is Read plus executing files.
	ReadExec = Read | Execute
	// WriteExisting is writing and truncating existing files.
	WriteExisting = WriteFile | Truncate
	// Write is every mutating right except making device nodes.
	Write = WriteFile | Truncate | RemoveDir | RemoveFile | MakeDir | MakeReg |
		MakeSock | MakeFifo | MakeSym | Refer
	// ReadWrite is ReadExec plus Write.
	ReadWrite = ReadExec | Write
	// ReadWritePlain is ReadWrite without making symbolic links, FIFOs or
	// sockets: for directories that later unsandboxed runs write into
	// (build outputs, git refs and reflogs), where a planted link would
	// redirect their writes and a FIFO would hang them.
	ReadWritePlain = ReadWrite &^ (MakeSym | MakeFifo | MakeSock)
	// Device is what an interactive device such as a terminal needs.
	Device = ReadFile | WriteFile | Truncate | IoctlDev
	// FileRights are the rights that mean something on a non-directory.
	FileRights = Execute | WriteFile | ReadFile | Truncate | IoctlDev
	// All is every right.
	All Access = (IoctlDev << 1) - 1
)

var accessNames = []struct {
	a    Access
	name string
}{
	{Execute, "execute"}, {WriteFile, "write_file"}, {ReadFile, "read_file"},
	{ReadDir, "read_dir"}, {RemoveDir, "remove_dir"}, {RemoveFile, "remove_file"},
	{MakeChar, "make_char"}, {MakeDir, "make_dir"}, {MakeReg, "make_reg"},
	{MakeSock, "make_sock"}, {MakeFifo, "make_fifo"}, {MakeBlock, "make_block"},
	{MakeSym, "make_sym"}, {Refer, "refer"}, {Truncate, "truncate"},
	{IoctlDev, "ioctl_dev"},
}

// Names lists the rights in a, in bit order.
func (a Access) Names() []string {
	var out []string
	for _, n := range accessNames {
		if a&n.a != 0 {
			out = append(out, n.name)
		}
	}
	return out
}

// Words says what a allows in a few plain words ("read, write", "read-only").
func (a Access) Words() string {
	switch {
	case a == 0:
		return "nothing"
	case a&Write == Write && a&Read == Read:
		if a&Execute != 0 {
			return "read, write, execute"
		}
		return "read, write"
	case a&(ReadWritePlain&^Execute) == ReadWritePlain&^Execute && a&(MakeSym|MakeFifo|MakeSock) == 0:
		if a&Execute != 0 {
			return "read, write (no links), execute"
		}
		return "read, write (no links)"
	case a&Write == 0 && a&Read == Read:
		if a&Execute != 0 {
			return "read, execute"
		}
		return "read-only"
	case a&^(ReadDir) == 0:
		return "list only"
	case a&Write == 0 && a&ReadFile != 0 && a&ReadDir == 0:
		return "read-only"
	case a&(Write&^WriteExisting) == 0 && a&WriteFile != 0:
		if a&ReadFile != 0 {
			return "read, write (existing file)"
		}
		return "write (existing file)"
	}
	return strings.Join(a.Names(), ",")
}

// String is the comma-joined list of right names.
func (a Access) String() string { return strings.Join(a.Names(), ",") }

// ParseAccess reads String's form, a comma-joined list of right names
// ("write_file", "make_reg,refer"). Names that are not file system rights
// (connect_tcp) add nothing.
func ParseAccess(s string) Access {
	var a Access
	for _, name := range strings.Split(s, ",") {
		for _, n := range accessNames {
			if n.name == strings.TrimSpace(name) {
				a |= n.a
			}
		}
	}
	return a
}

// MarshalJSON writes the rights as a list of names.
func (a Access) MarshalJSON() ([]byte, error) {
	names := a.Names()
	if names == nil {
		names = []string{}
	}
	return json.Marshal(names)
}

// UnmarshalJSON reads a list of right names.
func (a *Access) UnmarshalJSON(b []byte) error {
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return err
	}
	*a = 0
next:
	for _, s := range names {
		for _, n := range accessNames {
			if n.name == s {
				*a |= n.a
				continue next
			}
		}
		return fmt.Errorf("unknown access right %q", s)
	}
	return nil
}
