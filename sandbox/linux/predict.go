//go:build linux

package linux

import (
	"golang.org/x/sys/unix"

	"github.com/wrun-dev/wrun/access"
	"github.com/wrun-dev/wrun/policy"
)

// What the plan allows, as package access models it: the one model of a
// plan's decisions, which escalate asks too. Two views of it matter here:
//
//   - the grant's (platform): protected and hidden paths are exactly
//     what is refused, and everything else of a writable tree is
//     writable, which is what the mediation holds. wrun decides every
//     call it performs from it, and explains every denial from it.
//   - the kernel's (kernelModel): the command's own Landlock rules as
//     installed, carved around holes. A call wrun lets continue is
//     decided by the kernel from these; wrun predicts its denial from it.
//
// Outside the directories the mediation watches the two agree.

// platform maps what the plan enforces onto the access model's facts.
func (pl *Plan) platform() access.Platform {
	pf := access.Platform{
		Protection:   access.ProtectCarved,
		Unhandled:    policy.All &^ fromLandlock(pl.attr.handledFS),
		TCPUnhandled: pl.ABI < 4,
		UnixConfined: pl.ABI >= 9,
		Installed:    pl.Rules,
	}
	if pl.mediate {
		// Protected paths are refused by name and inode, hidden ones are
		// carved for the command and refused by the mediation: nothing
		// above them loses a right.
		pf.Protection, pf.MaskHidden, pf.Installed = access.ProtectExact, true, nil
		// wrun performs the calls in the directories of Entry rules.
		pf.Entries = true
		// Below ABI 3 wrun decides truncation itself (truncate(2) and
		// O_RDONLY|O_TRUNC): the grant's model checks it.
		pf.Unhandled &^= policy.Truncate
	}
	if pl.ABI == 0 {
		pf.Unhandled, pf.Installed = policy.All, nil
	}
	return pf
}

// accessModel is the grant's model of the plan (platform).
func (pl *Plan) accessModel() *access.Model { return access.New(pl.Policy, pl.platform()) }

// kernelModel is the model of the command's own Landlock rules.
func (pl *Plan) kernelModel() *access.Model {
	pf := pl.platform()
	pf.Protection, pf.MaskHidden, pf.Installed, pf.Entries = access.ProtectCarved, false, pl.Rules, false
	pf.Unhandled = policy.All &^ fromLandlock(pl.attr.handledFS)
	if pl.ABI == 0 {
		pf.Installed = nil
	}
	return access.New(pl.Policy, pf)
}

// openRights are the rights an open with flags asks Landlock for.
func openRights(flags uint64) policy.Access {
	var a policy.Access
	switch flags & unix.O_ACCMODE {
	case unix.O_RDONLY:
		a = policy.ReadFile
	case unix.O_WRONLY:
		a = policy.WriteFile
	case unix.O_RDWR:
		a = policy.ReadFile | policy.WriteFile
	}
	if flags&unix.O_TRUNC != 0 {
		a |= policy.Truncate
	}
	return a
}

// statRight is nodeRight for a stat's mode.
func statRight(mode uint32) policy.Access {
	switch mode & unix.S_IFMT {
	case unix.S_IFLNK:
		return policy.MakeSym
	case unix.S_IFIFO:
		return policy.MakeFifo
	case unix.S_IFSOCK:
		return policy.MakeSock
	case unix.S_IFCHR:
		return policy.MakeChar
	case unix.S_IFBLK:
		return policy.MakeBlock
	}
	return 0
}

func mknodRight(mode uint32) policy.Access {
	switch mode & unix.S_IFMT {
	case unix.S_IFIFO:
		return policy.MakeFifo
	case unix.S_IFSOCK:
		return policy.MakeSock
	case unix.S_IFCHR:
		return policy.MakeChar
	case unix.S_IFBLK:
		return policy.MakeBlock
	}
	return policy.MakeReg
}

// fromLandlock maps Landlock file system bits to the rights they stand for.
func fromLandlock(ll uint64) policy.Access {
	var a policy.Access
	for _, m := range accessMap {
		if ll&m.ll != 0 {
			a |= m.p
		}
	}
	return a
}
