package bolt

// PoolMax is how many free record files a store keeps.
const PoolMax = poolMax
