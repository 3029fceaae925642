package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/apache/arrow-go/v18/arrow/flight"

	"github.com/pixelflight/pixelflight/internal/recsize"
	"github.com/pixelflight/pixelflight/sched"
	"github.com/pixelflight/pixelflight/udf"
)

// resultMeta is the app metadata of the first result batch of each run
// of rows writeResults writes (docs/protocol.md, DoExchange).
type resultMeta struct {
	Backends map[string]int `json:"backends"`
}

// writeResults writes batch's results in order as its rows finish: the
// rows finished from the first go out once they hold
// udf.MaxResultBatchBytes, when rows wait for the memory budget (the
// results written give theirs back), and when the batch is done. It
// returns the rows written and how many were errors, and counts the rows
// each backend ran into mix.
func (s *Server) writeResults(ctx context.Context, w *flight.Writer, batch *sched.Batch, task *udf.Task, strict bool,
	proj projection, mix map[string]int) (rows, failed int64, err error) {
	n, written := batch.Len(), 0
	for written < n || n == 0 {
		if ctx.Err() != nil {
			return rows, failed, context.Cause(ctx)
		}
		prefix, grows := batch.Prefix()
		waiting := s.budget.RowsWaiting()
		flush := prefix == n
		if !flush && prefix > written {
			select {
			case <-waiting:
				flush = true
			default:
				flush = batch.Bytes(written, prefix) >= udf.MaxResultBatchBytes
			}
		}
		if !flush {
			if prefix == written {
				waiting = nil // nothing to write out
			}
			select {
			case <-grows:
			case <-waiting:
			case <-ctx.Done():
				return rows, failed, context.Cause(ctx)
			}
			continue
		}
		out, errs, by := batch.Take(written, prefix)
		res, err := task.Build(out, errs, strict, s.cfg.Alloc)
		if err != nil {
			var re *udf.RowError
			if errors.As(err, &re) {
				re.Row += written // the row of the batch
			}
			return rows, failed, err
		}
		failed += int64(res.RowErrors)
		for b, k := range by {
			mix[b] += k
		}
		meta, err := json.Marshal(resultMeta{Backends: by})
		if err != nil {
			res.Release()
			return rows, failed, fmt.Errorf("results' metadata: %w", err)
		}
		for i, rec := range res.Records {
			res.Records[i] = nil
			rec = proj.apply(rec)
			rows += rec.NumRows()
			s.m.bytesOut.Add(float64(recsize.Bytes(rec)))
			if i == 0 {
				err = w.WriteWithAppMetadata(rec, meta)
			} else {
				err = w.Write(rec)
			}
			rec.Release()
			if err != nil {
				res.Release()
				return rows, failed, fmt.Errorf("writing results: %w", err)
			}
		}
		batch.Free(written, prefix)
		written = prefix
		if n == 0 {
			break
		}
	}
	return rows, failed, nil
}
