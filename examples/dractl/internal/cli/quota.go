package cli

import (
	"flag"
	"fmt"

	"github.com/dralloc/dralloc/allocator"
)

// quotaFlag registers --enforce-quota.
func quotaFlag(fs *flag.FlagSet, p *bool) {
	fs.BoolVar(p, "enforce-quota", false, "apply the input's ResourceQuotas to the devices pods get, as limits per namespace and DeviceClass "+
		"(<class>.deviceclass.resource.k8s.io/devices and the extended-resource keys): a pod whose claims would take its namespace past one "+
		"fits nowhere, with the limit, the devices held and those asked as its reason, and a firstAvailable request takes the first "+
		"alternative within the quota. Unlike kube-apiserver's admission, which charges a claim its worst case when it is created, "+
		"the devices charged are those allocated")
}

// enforceQuota gives the snapshot the quota of the input's ResourceQuotas (--enforce-quota).
func (c *cluster) enforceQuota(on bool) error {
	if !on {
		return nil
	}
	q, err := allocator.QuotaFromResourceQuotas(c.objs.ResourceQuotas, c.objs.Classes)
	if err != nil {
		return fmt.Errorf("--enforce-quota: %w", err)
	}
	return c.snap.SetQuota(q)
}
