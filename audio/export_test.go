package audio

import "latencytest/rundata"

// PeriodForTest runs one period of a blocking driver.
func PeriodForTest(e *Engine, s *rundata.Sample) (bool, error) { return e.period(s) }
