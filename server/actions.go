package server

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/imageio"
	"github.com/pixelflight/pixelflight/internal/clip"
	"github.com/pixelflight/pixelflight/kernels/fft"
	"github.com/pixelflight/pixelflight/udf"
)

// ListActions names the actions DoAction serves.
func (s *Server) ListActions(_ *flight.Empty, stream flight.FlightService_ListActionsServer) error {
	for _, a := range []*flight.ActionType{
		{Type: "capabilities", Description: "ops with their params and output schemas, backends, limits, version (JSON)"},
		{Type: "health", Description: "whether the server takes new streams, and its backends (JSON)"},
		{Type: "stats", Description: "counters since start: streams, rows by backend, row errors by kind, bytes, queue, in-flight bytes, and every Prometheus series (JSON)"},
	} {
		if err := stream.Send(a); err != nil {
			return err
		}
	}
	return nil
}

// DoAction answers one action with one JSON result.
func (s *Server) DoAction(a *flight.Action, stream flight.FlightService_DoActionServer) error {
	var body any
	switch a.GetType() {
	case "capabilities":
		body = s.Capabilities()
	case "health":
		st := "SERVING"
		if !s.serving.Load() {
			st = "NOT_SERVING"
		}
		body = map[string]any{"status": st, "backends": s.backends(), "gpus": s.gpus.describe()}
	case "stats":
		st, err := s.Stats()
		if err != nil {
			return status.Error(codes.Internal, err.Error())
		}
		body = st
	default:
		return status.Errorf(codes.InvalidArgument, "unknown action %s: want capabilities, health or stats", clip.Quote(a.GetType()))
	}
	b, err := json.Marshal(body)
	if err != nil {
		return status.Error(codes.Internal, err.Error())
	}
	return stream.Send(&flight.Result{Body: b})
}

func (s *Server) backends() []map[string]any {
	vector := "none"
	if fft.Vectorized() {
		vector = "avx2+fma"
	}
	var out []map[string]any
	for _, b := range s.sched.Backends() {
		m := map[string]any{"name": b.Name, "lanes": b.Lanes, "max_batch": b.MaxBatch, "healthy": b.Healthy}
		if b.Fault != "" {
			m["fault"] = b.Fault
		}
		if b.Name == "cpu" {
			m["vector"] = vector
		}
		if b.Decoder != "" {
			m["decoder"] = b.Decoder
		}
		out = append(out, m)
	}
	return out
}

// orEmpty is s, or an empty slice for nil: JSON lists are [], never null.
func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// Capabilities describes what the server offers. Lists are [] when empty.
func (s *Server) Capabilities() map[string]any {
	var ops []map[string]any
	for _, op := range s.reg.Ops() {
		outputs := map[string]any{}
		for label, params := range op.Outputs {
			t, err := op.Prepare(params, s.cfg.Limits)
			if err != nil {
				continue
			}
			var fields []map[string]string
			for _, f := range t.Schema.Fields() {
				fields = append(fields, map[string]string{"name": f.Name, "type": f.Type.String()})
			}
			outputs[label] = fields
		}
		ops = append(ops, map[string]any{"name": op.Name, "summary": op.Summary, "params": orEmpty(op.Params), "outputs": outputs})
	}
	return map[string]any{
		"version":  s.cfg.Version,
		"ops":      ops,
		"backends": orEmpty(s.backends()),
		"gpus":     s.gpus.describe(),
		"cascades": orEmpty(s.cfg.Cascades.Names()),
		"limits": map[string]any{
			"memory_budget":     s.cfg.MemoryBudget,
			"max_delay_ms":      s.cfg.MaxDelay.Seconds() * 1000,
			"max_pixels":        s.cfg.Limits.MaxPixels,
			"max_kernel_side":   s.cfg.Limits.MaxKernelSide,
			"max_message_bytes": s.cfg.MaxMessageBytes,
			"max_command_bytes": udf.MaxCommandBytes,
		},
		"input": map[string]any{
			"column_types": []string{"binary", "large_binary", "binary_view", "struct<origin,height,width,nChannels,mode,data> (Spark image)"},
			"formats":      []string{"png", "jpeg", "gif", "bmp", "tiff", "webp", "pgm/ppm"},
			"jpeg_decoder": imageio.JPEGDecoder(),
			"png_decoder":  imageio.PNGDecoder(),
		},
	}
}
