//go:build !unix

package verify

import "errors"

// ErrStateInUse is returned for a key a live run holds.
var ErrStateInUse = errors.New("in use by a live run")

// StateUse is a run's hold on its key; here, where wrun keeps no private
// state, nothing.
type StateUse struct{}

// UseState holds nothing here.
func UseState(root, key string, rec StateRecord, max int64) (*StateUse, error) { return nil, nil }

// Done does nothing here.
func (u *StateUse) Done() ([]string, error) { return nil, nil }

// ListState lists nothing here.
func ListState(root string) ([]StateEntry, error) { return nil, nil }

// RemoveState is not supported here.
func RemoveState(root, key string) error {
	return errors.New("wrun keeps no private state on this platform")
}

// EvictState removes nothing here.
func EvictState(root string, max int64) ([]string, error) { return nil, nil }
