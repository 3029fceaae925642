//go:build !race

package server

const race = false
