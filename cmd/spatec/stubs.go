package main

import (
	"context"
	"io"
)

func cmdExec(context.Context, []string, io.Writer, io.Writer) error {
	return usageError{"not built yet"}
}
func cmdCeiling(context.Context, []string, io.Writer, io.Writer) error {
	return usageError{"not built yet"}
}
func cmdValidate(context.Context, []string, io.Writer, io.Writer) error {
	return usageError{"not built yet"}
}
func cmdReport(context.Context, []string, io.Writer, io.Writer) error {
	return usageError{"not built yet"}
}
