package server

import (
	"encoding/json"

	"github.com/apache/arrow-go/v18/arrow/flight"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/pixelflight/pixelflight/api"
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
		body = api.Health{Status: st, Backends: orEmpty(s.backends()), GPUs: s.gpus.describe()}
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

func (s *Server) backends() []api.Backend {
	vector := "none"
	if fft.Vectorized() {
		vector = "avx2+fma"
	}
	var out []api.Backend
	for _, b := range s.sched.Backends() {
		a := api.Backend{Name: b.Name, Lanes: b.Lanes, MaxBatch: b.MaxBatch, Healthy: b.Healthy, Fault: b.Fault, Decoder: b.Decoder}
		if b.Name == "cpu" {
			a.Vector = vector
		}
		out = append(out, a)
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

// Capabilities describes what the server offers.
func (s *Server) Capabilities() api.Capabilities {
	ops := []api.Op{}
	for _, op := range s.reg.Ops() {
		outputs := map[string][]api.Field{}
		for label, params := range op.Outputs {
			spec, _, err := op.Prepare(params, s.cfg.Limits)
			if err != nil {
				continue
			}
			var fields []api.Field
			for _, f := range spec.Schema().Fields() {
				fields = append(fields, api.Field{Name: f.Name, Type: f.Type.String()})
			}
			outputs[label] = fields
		}
		ops = append(ops, api.Op{Name: op.Name, Summary: op.Summary, Params: orEmpty(op.Params), Outputs: outputs})
	}
	return api.Capabilities{
		Version:  s.cfg.Version,
		Ops:      ops,
		Backends: orEmpty(s.backends()),
		GPUs:     s.gpus.describe(),
		Cascades: orEmpty(s.cfg.Cascades.Names()),
		Limits: api.Limits{
			MemoryBudget:    s.cfg.MemoryBudget,
			MaxDelayMS:      s.cfg.MaxDelay.Seconds() * 1000,
			MaxPixels:       s.cfg.Limits.MaxPixels,
			MaxKernelSide:   s.cfg.Limits.MaxKernelSide,
			MaxMessageBytes: s.cfg.MaxMessageBytes,
			MaxCommandBytes: udf.MaxCommandBytes,
		},
		Input: api.Input{
			ColumnTypes: []string{"binary", "large_binary", "binary_view", "struct<origin,height,width,nChannels,mode,data> (Spark image)"},
			Formats:     []string{"png", "jpeg", "gif", "bmp", "tiff", "webp", "pgm/ppm"},
			JPEGDecoder: imageio.JPEGDecoder(),
			PNGDecoder:  imageio.PNGDecoder(),
		},
	}
}
