import { postNotification, type HttpResult, type NotificationHeaderOptions } from './http';
import type { ServiceProcess } from './serviceProcess';
import { shuffle } from './traffic';

export type IngressPostOptions = NotificationHeaderOptions & { timeoutMs?: number };

/**
 * The ingress controller in front of the replicas, in miniature: each request goes to a replica
 * picked at random among the endpoints in rotation. Like nginx's `proxy_next_upstream error`, a
 * connection the replica refuses (a pod stopping or killed but still in rotation) is passed to
 * another endpoint; a request once written is never sent twice (a POST is not idempotent).
 */
export class Ingress {
  private readonly endpoints: ServiceProcess[] = [];
  /** Requests answered (or cut) by each replica, by label. */
  readonly served = new Map<string, number>();
  /** Connections refused by a replica and passed to another. */
  passedOn = 0;

  /** A pod became ready: its endpoint is added. */
  add(replica: ServiceProcess): void {
    if (!this.endpoints.includes(replica)) this.endpoints.push(replica);
  }

  /** A pod is terminating or gone: its endpoint is removed. */
  remove(replica: ServiceProcess): void {
    const index = this.endpoints.indexOf(replica);
    if (index >= 0) this.endpoints.splice(index, 1);
  }

  get replicas(): readonly ServiceProcess[] {
    return [...this.endpoints];
  }

  post(body: Buffer, options: IngressPostOptions = {}): Promise<HttpResult> {
    return this.postVia(shuffle(this.endpoints), body, options);
  }

  /**
   * The same notification to `copies` different replicas at the same moment (the payment service's
   * duplicates racing in the cluster); fewer when fewer replicas are in rotation.
   */
  postCopies(body: Buffer, copies: number, options: IngressPostOptions = {}): Promise<HttpResult[]> {
    const order = shuffle(this.endpoints);
    const lanes = order.slice(0, Math.max(1, copies)).map((_, i) => [...order.slice(i), ...order.slice(0, i)]);
    return Promise.all(lanes.map((candidates) => this.postVia(candidates, body, options)));
  }

  /** Tries the candidates in order until one takes the connection. */
  private async postVia(
    candidates: readonly ServiceProcess[],
    body: Buffer,
    options: IngressPostOptions,
  ): Promise<HttpResult> {
    let result: HttpResult | null = null;
    for (const replica of candidates) {
      if (result) this.passedOn += 1;
      result = await postNotification(replica.publicPort, body, options);
      if (!(result.status === 0 && result.error === 'ECONNREFUSED' && result.sentAt === null)) {
        this.served.set(replica.label, (this.served.get(replica.label) ?? 0) + 1);
        return result;
      }
    }
    if (result) return result;
    throw new Error('the ingress has no endpoint in rotation');
  }
}
