package server

import (
	"maps"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// labeled gathers g's series with labels added to each (a series' own
// label of a name wins), its labels sorted by name.
type labeled struct {
	g      prometheus.Gatherer
	labels map[string]string
}

func (l labeled) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := l.g.Gather()
	if len(l.labels) == 0 {
		return mfs, err
	}
	names := slices.Sorted(maps.Keys(l.labels))
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, name := range names {
				if !slices.ContainsFunc(m.GetLabel(), func(p *dto.LabelPair) bool { return p.GetName() == name }) {
					m.Label = append(m.Label, &dto.LabelPair{Name: &name, Value: new(l.labels[name])})
				}
			}
			slices.SortFunc(m.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
		}
	}
	return mfs, err
}
