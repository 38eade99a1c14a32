import { deleteExchange, uniqueExchange } from '../../support/broker';
import type { TestDatabase } from '../../support/database';
import { ServiceProcess, type ServiceProcessOptions } from './serviceProcess';
import { scenarioDatabase } from './store';
import { Ledger } from './traffic';

/**
 * What a scenario owns: its own database and exchange, the ledger of what it sent, every service
 * process it started, and whatever else must be stopped at its end (the consumer, proxies).
 * Created inside the scenario's describe block, it registers the teardown as its afterAll: first
 * what was asked to go first (a sender), then the services, then the kept things in reverse order,
 * then the database is dropped and the exchange deleted (a service declares it whether or not a consumer
 * of the scenario's ever did).
 */
export class ScenarioWorld {
  readonly database: TestDatabase;
  readonly exchange = uniqueExchange();
  readonly ledger = new Ledger();
  readonly services: ServiceProcess[] = [];
  private readonly kept: Array<{ stop(): Promise<unknown> }> = [];
  private readonly first: Array<() => Promise<unknown> | undefined> = [];

  constructor(databasePrefix: string) {
    this.database = scenarioDatabase(databasePrefix);
    afterAll(() => this.release());
  }

  /** Starts a service process; it is stopped at the scenario's end. */
  async startService(options: ServiceProcessOptions): Promise<ServiceProcess> {
    const service = await ServiceProcess.start(options);
    this.services.push(service);
    return service;
  }

  /** Keeps something to stop at the scenario's end (after the services). */
  keep<T extends { stop(): Promise<unknown> }>(thing: T): T {
    this.kept.push(thing);
    return thing;
  }

  /** Runs before the services are stopped at the scenario's end (halting a sender, say). */
  beforeStopping(step: () => Promise<unknown> | undefined): void {
    this.first.push(step);
  }

  private async release(): Promise<void> {
    for (const step of this.first) await step();
    for (const service of this.services) await service.stop();
    for (const thing of [...this.kept].reverse()) await thing.stop();
    await this.database.drop();
    await deleteExchange(this.exchange);
  }
}
