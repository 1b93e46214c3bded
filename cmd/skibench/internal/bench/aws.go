package bench

// AWS's figures the lab prices and limits the models with. They are list
// prices and default quotas, not measurements: check the current ones
// before deciding.

// DynamoDB list prices, us-east-1, after AWS's November 2024 on-demand
// price cut, from aws.amazon.com/dynamodb/pricing/ (on-demand and
// provisioned pages, Standard table class), as read in 2025.
const (
	onDemandWritePerMillion = 0.625   // $ per million write request units
	onDemandReadPerMillion  = 0.125   // $ per million read request units
	provisionedWCUHour      = 0.00065 // $ per WCU-hour
	provisionedRCUHour      = 0.00013 // $ per RCU-hour
)

// DynamoDB's documented default limits.
const (
	// PartitionWriteUnitsPerSec is what one partition key value serves
	// (docs.aws.amazon.com/amazondynamodb/latest/developerguide/
	// bp-partition-key-design.html: 1,000 WCU and 3,000 RCU a second per
	// partition).
	PartitionWriteUnitsPerSec = 1000
	// TableQuotaWriteUnitsPerSec is the default table-level write quota
	// (Service Quotas, docs.aws.amazon.com/amazondynamodb/latest/
	// developerguide/ServiceQuotas.html: on demand 40,000 write request
	// units per table; provisioned 40,000 WCU per table or GSI; adjustable
	// on request). The lab applies it to each table and each index alone.
	TableQuotaWriteUnitsPerSec = 40000
	// NewTableWriteUnitsPerSec is what a newly created on-demand table
	// takes at once: "New on-demand tables will be able to sustain up to
	// 4,000 writes per second and 12,000 reads per second" (write request
	// units; reads and writes trade off linearly), beyond which it may
	// throttle while it scales, past twice its previous peak within 30
	// minutes (docs.aws.amazon.com/amazondynamodb/latest/developerguide/
	// on-demand-capacity-mode.html, "Initial throughput and scaling
	// properties"; pre-warming-on-demand-capacity-mode.html).
	NewTableWriteUnitsPerSec = 4000
)

// Time as the lab bills it: a month is 30 days.
const (
	hoursPerMonth   = 30 * 24
	secondsPerMonth = hoursPerMonth * 3600
)

// BreakEvenUtilisation is the average use of provisioned capacity above
// which it costs less than on demand: a WCU-hour buys 3,600 writes a
// second's worth, on demand those cost 3,600 × the unit price. Reads give
// the same ratio at these prices ($0.00013 against 3,600 × $0.125 a
// million).
func BreakEvenUtilisation() float64 {
	return provisionedWCUHour / (3600 * onDemandWritePerMillion / 1e6)
}

// RDSInstance is one Amazon RDS for PostgreSQL instance class.
type RDSInstance struct {
	Class string
	VCPUs float64
	// Baseline is the share of its vCPUs a burstable (t4g) class sustains
	// without CPU credits (1 for the others).
	Baseline float64
	// Hourly is the on-demand price, Single-AZ, $ an hour.
	Hourly float64
}

// Usable is the vCPUs it sustains.
func (i RDSInstance) Usable() float64 { return i.VCPUs * i.Baseline }

// RDSInstances are a few Graviton classes, smallest first: us-east-1
// on-demand Single-AZ list prices for PostgreSQL from
// aws.amazon.com/rds/postgresql/pricing/ as read in 2025 (t4g baselines
// from the EC2 burstable-instance documentation); Multi-AZ costs twice.
// Storage (gp3 $0.115 a GB-month), backups and I/O are not included.
var RDSInstances = []RDSInstance{
	{"db.t4g.medium", 2, 0.20, 0.065},
	{"db.t4g.large", 2, 0.30, 0.129},
	{"db.m7g.large", 2, 1, 0.168},
	{"db.m7g.xlarge", 4, 1, 0.336},
	{"db.m7g.2xlarge", 8, 1, 0.672},
	{"db.m7g.4xlarge", 16, 1, 1.344},
	{"db.m7g.8xlarge", 32, 1, 2.688},
	{"db.m7g.16xlarge", 64, 1, 5.376},
}

// RDSHeadroom is the share of an instance's sustained vCPUs the lab lets
// the peak use: the rest is for vacuum, checkpoints and the unexpected.
const RDSHeadroom = 0.7
