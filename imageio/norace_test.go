//go:build !race

package imageio

const allocScale = 1
