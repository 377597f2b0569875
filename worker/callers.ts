/** Who a request comes from, once authenticated (middleware/auth.ts). */
export interface Caller {
  accountId: string;
  tokenId: string;
}

/** Who calls an agent route: the node its token is bound to. */
export interface AgentCaller {
  nodeId: string;
  tokenId: string;
}
