//go:build !unix

package verify

import "errors"

var errNoGuard = errors.New("the guard's checks need a Unix system")

const oNoFollow = 0

func mkdirNoFollow(string) error                       { return errNoGuard }
func removeNoFollow(string) (bool, error)              { return false, errNoGuard }
func restoreLinkNoFollow(string, string) (bool, error) { return false, errNoGuard }
func renameNoFollow(string, string) (bool, error)      { return false, errNoGuard }
