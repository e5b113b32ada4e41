package celenv

import (
	"errors"

	"github.com/google/cel-go/cel"
	"github.com/google/cel-go/common/types"
	"github.com/google/cel-go/common/types/ref"
)

// deviceTypeName is the CEL type of the variable "device", as Kubernetes
// names it.
const deviceTypeName = "kubernetes.DRADevice"

// deviceProvider adds the kubernetes.DRADevice object type to CEL's type
// provider. Its fields read straight from the prepared deviceVal.
type deviceProvider struct {
	types.Provider
	deviceType *cel.Type
	fields     map[string]*types.FieldType
}

func newDeviceProvider(base types.Provider, attributeType *cel.Type, multiAlloc bool) *deviceProvider {
	isSet := func(any) bool { return true }
	field := func(t *cel.Type, get func(*deviceVal) ref.Val) *types.FieldType {
		return &types.FieldType{
			Type:  t,
			IsSet: isSet,
			GetFrom: func(obj any) (any, error) {
				d, ok := obj.(*deviceVal)
				if !ok {
					return nil, errNotDevice
				}
				return get(d), nil
			},
		}
	}
	p := &deviceProvider{
		Provider:   base,
		deviceType: cel.ObjectType(deviceTypeName),
		fields: map[string]*types.FieldType{
			driverVar: field(cel.StringType, func(d *deviceVal) ref.Val { return d.driver }),
			attributesVar: field(cel.MapType(cel.StringType, cel.MapType(cel.StringType, attributeType)),
				func(d *deviceVal) ref.Val { return d.attributes }),
			capacityVar: field(cel.MapType(cel.StringType, cel.MapType(cel.StringType, quantityType)),
				func(d *deviceVal) ref.Val { return d.capacity }),
		},
	}
	if multiAlloc {
		p.fields[multiAllocVar] = field(cel.BoolType, func(d *deviceVal) ref.Val { return d.multiAlloc })
	}
	return p
}

var errNotDevice = errors.New("value is not a device")

func (p *deviceProvider) FindStructType(name string) (*types.Type, bool) {
	if name == deviceTypeName {
		return types.NewTypeTypeWithParam(p.deviceType), true
	}
	return p.Provider.FindStructType(name)
}

// FindStructFieldNames reports no names for the device type, as Kubernetes'
// declared-type provider does.
func (p *deviceProvider) FindStructFieldNames(name string) ([]string, bool) {
	if name == deviceTypeName {
		return []string{}, false
	}
	return p.Provider.FindStructFieldNames(name)
}

func (p *deviceProvider) FindStructFieldType(name, field string) (*types.FieldType, bool) {
	if name == deviceTypeName {
		ft, ok := p.fields[field]
		return ft, ok
	}
	return p.Provider.FindStructFieldType(name, field)
}
