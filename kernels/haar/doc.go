// Package haar detects objects (faces, eyes, ...) with OpenCV's boosted
// Haar cascades, giving the same boxes as cv2.CascadeClassifier's
// detectMultiScale2 (OpenCV 4.x) on the same 8-bit grayscale image.
//
// # Cascades
//
// Parse reads the XML format opencv_traincascade writes and Debian's
// opencv-data ships (stageType BOOST, featureType HAAR): stumps or small
// trees, two- or three-rectangle features, upright or tilted 45°. Everything
// read is bounds-checked (feature rectangles inside the window, tree
// children pointing forward or at an existing leaf, sizes capped), so a
// hostile file is an error, never an out-of-range read; FuzzParse holds it
// to that. The old "opencv-haar-classifier" format is refused.
//
// A Library maps cascade names to the *.xml files in directories fixed at
// start (Debian's DebianDir and the server's --cascade-dir). A request names
// a cascade; it can never name a path. Cascades are parsed on first use and
// shared.
//
// # Detection, as OpenCV does it
//
//   - Pyramid: factor 1, s, s², ... while the scaled window fits the image
//     and max size; levels whose window is below min size are skipped. The
//     image is resized to round(w/f)×round(h/f) with OpenCV's bit-exact
//     bilinear resize (INTER_LINEAR_EXACT, reimplemented in resize.go and
//     checked against cv2.resize); the window stays at the cascade's size.
//   - Per level: integral, squared and (when needed) tilted integral images
//     in 32 bits as OpenCV keeps them (laid out as Speed says); windows
//     every 2 pixels (every pixel from factor 2 up); a window whose first
//     stage fails also skips the next position; windows with a standard
//     deviation under 10 gray levels are rejected before any stage.
//   - Per window: the variance normalisation, feature sums and stage sums
//     are computed with OpenCV's float32/float64 types in OpenCV's order
//     (stage thresholds less 1e-5), so that ties fall the same way.
//   - Grouping: cv::groupRectangles with eps 0.2: union-find clusters of
//     similar boxes, cluster means, clusters with min_neighbors or fewer
//     members dropped, small clusters inside big ones dropped; then boxes
//     clipped to the image. Face.Neighbors is the cluster's size.
//
// The tests compare resize, integral images and grouping with values
// cv2 computed (testdata/opencv_ref.json, from scripts/haarref.py), and
// tests/test_faces.py compares whole detections with cv2 on photos, crops,
// scalings and a grid of LFW faces for the default, alt2 and a tilted,
// tree-based cascade: the boxes and neighbour counts are identical.
//
// # Speed
//
// A window costs a few dozen memory reads per feature and most windows end
// in the first stages, so the inner loop is what matters: features are laid
// out once per image size as byte offsets from the window's corner
// (program.go), read without bounds checks (Parse and a check per level
// guarantee every offset stays inside the integral image), and stump
// leaves are chosen without a branch, since whether a feature passes its
// threshold is a coin toss for the branch predictor. Trees of two nodes
// (alt2's, the eye 2-splits cascades') are laid out flat, both nodes side
// by side, not walked as general trees. A Detector reuses its buffers; one
// per worker goroutine.
//
// Levels scanned every 2 pixels keep their integral images split, each
// row's even columns first and its odd ones after (integralsSplit), so
// that in either layout the windows of a row are consecutive elements and
// a feature corner of 8 neighbouring windows is one 8-wide load. The SIMD
// build (GOEXPERIMENT=simd on amd64 with AVX2; vec_simd.go) scans cascades
// of stumps or pairs 8 windows at a time: the variance normalisation and
// every stage in all 8 lanes, in the scalar path's types and order (no
// fused multiply-adds), with a bit per window still in the cascade; stage
// 0's results settle which windows the skip rule leaves out, the batch
// stops when no window is left, and hands a last lone window to the scalar
// path. General trees, CPUs without AVX2 and the portable build
// (vec_generic.go) run the scalar path. The tests hold the vector path to
// the scalar one window by window (vnf bit for bit, the rejecting stage)
// and Detect to the plain-layout scalar scan, raw detection by raw
// detection.
package haar
