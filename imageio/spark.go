package imageio

import "fmt"

// OpenCV type codes accepted in Spark's image struct.
const (
	cv8UC1 = 0
	cv8UC3 = 16
	cv8UC4 = 24
)

// SparkImageInfo checks Spark's image data source struct (origin, height,
// width, nChannels, mode, data) as SparkImageGray does, but for the pixel
// limit, and returns its size: Format "spark_image". Spark's image source
// gives height, width and nChannels -1 for a file it could not read
// (ErrBadDims).
func SparkImageInfo(height, width, nChannels, mode int32, data []byte) (Info, error) {
	if err := checkSpark(height, width, nChannels, mode); err != nil {
		return Info{}, err
	}
	if err := checkSparkData(height, width, nChannels, data); err != nil {
		return Info{}, err
	}
	return Info{Format: "spark_image", W: int(width), H: int(height), Channels: int(nChannels)}, nil
}

// SparkImageGray converts Spark's image data source struct (origin, height,
// width, nChannels, mode, data) to gray. data is row-major and interleaved,
// B,G,R(,A) for 3 and 4 channels; mode is the OpenCV type and must be
// CV_8UC1 (0), CV_8UC3 (16) or CV_8UC4 (24), matching nChannels.
// dst.Pix is reused when its capacity is big enough.
func SparkImageGray(height, width, nChannels, mode int32, data []byte, lim Limits, dst *Gray) error {
	if err := checkSpark(height, width, nChannels, mode); err != nil {
		return err
	}
	if err := checkLimit("spark", "struct", int(width), int(height), lim); err != nil {
		return err
	}
	if err := checkSparkData(height, width, nChannels, data); err != nil {
		return err
	}
	n := int(width) * int(height)
	buf := grow(dst.Pix, n)
	if nChannels == 1 {
		copy(buf, data)
	} else {
		step := int(nChannels)
		for i := range buf {
			p := data[step*i : step*i+3 : step*i+3]
			buf[i] = luma(uint32(p[2]), uint32(p[1]), uint32(p[0])) // B,G,R
		}
	}
	dst.W, dst.H, dst.Pix = int(width), int(height), buf
	return nil
}

// checkSpark checks a Spark struct's size, mode and nChannels.
func checkSpark(height, width, nChannels, mode int32) error {
	if height <= 0 || width <= 0 {
		return fmt.Errorf("%w: spark struct says %dx%d (width x height)", ErrBadDims, width, height)
	}
	var c int32
	switch mode {
	case cv8UC1:
		c = 1
	case cv8UC3:
		c = 3
	case cv8UC4:
		c = 4
	default:
		return fmt.Errorf("%w: mode %d is not CV_8UC1 (0), CV_8UC3 (16) or CV_8UC4 (24)", ErrBadStruct, mode)
	}
	if nChannels != c {
		return fmt.Errorf("%w: nChannels %d does not match mode %d (%d channels)", ErrBadStruct, nChannels, mode, c)
	}
	return nil
}

// checkSparkData checks the length of a checked Spark struct's data.
func checkSparkData(height, width, nChannels int32, data []byte) error {
	if want := int64(height) * int64(width) * int64(nChannels); int64(len(data)) != want {
		return fmt.Errorf("%w: len(data) is %d, want %d*%d*%d = %d", ErrBadStruct, len(data), height, width, nChannels, want)
	}
	return nil
}
