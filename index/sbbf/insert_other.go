//go:build !amd64 || purego

package sbbf

func insertMany(bits []byte, hs []uint64) { insertManyGo(bits, hs) }
