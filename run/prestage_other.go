//go:build !linux

package run

import "os"

type noPrestage struct{}

func startPrestage(Platform, bool, *os.File) prestage { return noPrestage{} }

func (noPrestage) adopt(pl Plan) Plan { return pl }
func (noPrestage) abandon()           {}
