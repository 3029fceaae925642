package watershed

import "fmt"

// Params controls the pipeline. The zero value is not valid; start from
// DefaultParams.
type Params struct {
	// Threshold splits foreground from background: foreground is
	// pixel > Threshold. -1 means Otsu's threshold of the image, as
	// skimage.filters.threshold_otsu computes it; otherwise 0..255.
	Threshold int
	// MinDistance is peak_local_max's min_distance: peaks are local maxima
	// of the distance map over a (2*MinDistance+1)² window, at least
	// MinDistance from the image border and at least MinDistance apart
	// (Chebyshev). It must be >= 1.
	MinDistance int
}

// DefaultParams returns Otsu's threshold and MinDistance 5.
func DefaultParams() Params {
	return Params{Threshold: -1, MinDistance: 5}
}

// Validate reports the first invalid field.
func (p Params) Validate() error {
	if p.Threshold < -1 || p.Threshold > 255 {
		return fmt.Errorf("threshold %d: want 0 to 255, or -1 for Otsu's", p.Threshold)
	}
	if p.MinDistance < 1 {
		return fmt.Errorf("min_distance %d: want at least 1", p.MinDistance)
	}
	return nil
}
