// Where a cloud node lands: a pure function of its position in its pool, so the same stack file always
// yields the same placement. Append new nodes at the end of a pool: moving one moves the others.

/** A node's share of the domains: `poolIndex` spread round-robin over `domainCount` domains. */
export interface Spread {
  /** Index into the list of availability domains/zones. */
  readonly domainIndex: number;
  /** OCI fault domain: the next one each time the pool wraps around the domains. */
  readonly faultDomain: string;
}

/** Spreads the `poolIndex`-th node of a pool over `domainCount` domains and three fault domains. */
export function spread(poolIndex: number, domainCount: number): Spread {
  if (domainCount < 1) throw new Error(`spread: need at least one domain; got ${domainCount}`);
  return {
    domainIndex: poolIndex % domainCount,
    faultDomain: `FAULT-DOMAIN-${(Math.floor(poolIndex / domainCount) % 3) + 1}`,
  };
}
