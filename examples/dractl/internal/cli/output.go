package cli

import (
	"encoding/json"

	"sigs.k8s.io/yaml"
)

// encode writes v as YAML or JSON, as -o asks.
func (e *env) encode(v any) error {
	if e.output == "json" {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	data, err := yaml.Marshal(v)
	if err != nil {
		return err
	}
	_, err = e.stdout.Write(data)
	return err
}
