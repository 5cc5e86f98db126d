import { foldAgentName } from '../../protocol/agent.js';
import { type BrokerError, a2aError } from '../../protocol/broker-error.js';
import type { Registration, Registry } from './registry.js';

/**
 * Who an agent may address: live agents of its own kind, in any context,
 * except itself; and whom a message's `to` names.
 */

/** Live agents of the caller's kind, in any context, except the caller. */
export function addressable(registry: Registry, caller: Registration): Registration[] {
  const { byId, order } = registry.getSnapshot().context;
  const out: Registration[] = [];
  for (const r of byId.values()) {
    if (isAddressable(caller, r)) out.push(r);
  }
  return out.sort((a, b) => (order.get(a.agentId) ?? 0) - (order.get(b.agentId) ?? 0));
}

/**
 * `to` as an agentId, else a name in the caller's context, else a name
 * unique on the host, among the addressable agents only (indexed: no scan
 * of every live agent).
 */
export function resolveTo(registry: Registry, caller: Registration, to: string): Registration {
  const { byId, byName } = registry.getSnapshot().context;
  const direct = byId.get(to);
  if (direct !== undefined && isAddressable(caller, direct)) return direct;
  const named: Registration[] = [];
  for (const agentId of byName.get(foldAgentName(to)) ?? []) {
    const r = byId.get(agentId);
    if (r !== undefined && isAddressable(caller, r)) named.push(r);
  }
  const local = named.find((r) => r.party.contextId === caller.party.contextId);
  if (local !== undefined) return local;
  if (named.length === 1 && named[0] !== undefined) return named[0];
  throw unresolved(registry, caller, to, direct, named);
}

/** Why `to` resolves to no one: several agents of other contexts, an agent of the other kind, the caller, or nobody. */
function unresolved(
  registry: Registry,
  caller: Registration,
  to: string,
  direct: Registration | undefined,
  named: readonly Registration[],
): BrokerError {
  if (named.length > 1) {
    const agentIds = named.map((r) => r.agentId);
    const listed = named.map((r) => `${r.agentId} (context ${r.party.contextId})`).join(', ');
    return a2aError(
      'A2A_UNKNOWN_AGENT',
      `${named.length} agents of other contexts answer to "${to}": ${listed}; address one by its agentId`,
      { to, reason: 'ambiguous', agentIds },
    );
  }
  if (direct?.agentId === caller.agentId || (named.length === 0 && isCallerName(caller, to))) {
    return a2aError('A2A_UNKNOWN_AGENT', `"${to}" is the caller itself: address another agent`, {
      to,
      reason: 'self',
    });
  }
  const { byId, byName } = registry.getSnapshot().context;
  let other = direct !== undefined && direct.kind !== caller.kind ? direct : undefined;
  for (const agentId of other === undefined ? (byName.get(foldAgentName(to)) ?? []) : []) {
    const r = byId.get(agentId);
    if (r !== undefined && r.kind !== caller.kind) {
      other = r;
      break;
    }
  }
  if (other !== undefined) {
    return a2aError(
      'A2A_UNKNOWN_AGENT',
      `"${to}" is an agent of the other kind (${other.kind}; the caller is a ${caller.kind}): agents address only agents of their own kind`,
      { to, reason: 'other-kind', kind: other.kind },
    );
  }
  return a2aError(
    'A2A_UNKNOWN_AGENT',
    `no live agent answers to "${to}": list the addressable ones with a2a.agents.list, or wait for it to register`,
    { to, reason: 'none' },
  );
}

function isCallerName(caller: Registration, to: string): boolean {
  return foldAgentName(to) === foldAgentName(caller.party.name);
}

/** Agents of the caller's kind, in any context, except the caller. */
function isAddressable(caller: Registration, r: Registration): boolean {
  return r.kind === caller.kind && r.agentId !== caller.agentId;
}
