package watershed

import "encoding/binary"

// otsu returns skimage.filters.threshold_otsu of an 8-bit image.
//
// skimage histograms integer images with one bin per value between the
// image's minimum and maximum (nbins is ignored), so the threshold is always
// an integer. The arithmetic below follows the numpy expressions operation
// for operation, so ties in the between-class variance resolve the same way
// (first maximum wins). A constant image returns its value.
func otsu(pix []uint8) int {
	// Eight partial histograms, so that runs of one value do not wait on
	// the same counter; eight pixels per load, counted at once where they
	// are all the same (flat regions).
	var part [8][256]uint32
	i := 0
	for ; i+8 <= len(pix); i += 8 {
		v := binary.LittleEndian.Uint64(pix[i:])
		if v == uint64(uint8(v))*0x0101010101010101 {
			part[i>>3&7][uint8(v)] += 8
			continue
		}
		part[0][uint8(v)]++
		part[1][uint8(v>>8)]++
		part[2][uint8(v>>16)]++
		part[3][uint8(v>>24)]++
		part[4][uint8(v>>32)]++
		part[5][uint8(v>>40)]++
		part[6][uint8(v>>48)]++
		part[7][uint8(v>>56)]++
	}
	for ; i < len(pix); i++ {
		part[0][pix[i]]++
	}
	var hist [256]int64
	for v := range hist {
		for k := range part {
			hist[v] += int64(part[k][v])
		}
	}
	lo, hi := 0, 255
	for hist[lo] == 0 {
		lo++
	}
	for hist[hi] == 0 {
		hi--
	}
	if lo == hi {
		return lo
	}
	n := hi - lo + 1
	// Suffix sums: weight2[i] and mean2[i] describe bins i..n-1.
	var weight2 [256]int64
	var mean2 [256]float64
	var w, m int64
	for i := n - 1; i >= 0; i-- {
		w += hist[lo+i]
		m += hist[lo+i] * int64(lo+i)
		weight2[i] = w
		mean2[i] = float64(m) / float64(w)
	}
	best, bestIdx := -1.0, 0
	w, m = 0, 0
	for i := 0; i < n-1; i++ {
		w += hist[lo+i]
		m += hist[lo+i] * int64(lo+i)
		mean1 := float64(m) / float64(w)
		d := mean1 - mean2[i+1]
		v := float64(w*weight2[i+1]) * (d * d)
		if v > best {
			best, bestIdx = v, i
		}
	}
	return lo + bestIdx
}
