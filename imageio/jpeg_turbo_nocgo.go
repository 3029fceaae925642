//go:build !cgo

package imageio

// Without cgo there is no libjpeg-turbo: JPEGs always use image/jpeg.
func turboGray() jpegGray { return nil }

// JPEGDecoder names the JPEG decoder in use: always "go image/jpeg" in a
// build without cgo.
func JPEGDecoder() string { return goJPEG }
