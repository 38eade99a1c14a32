import {
  runSimulation,
  scaledClock,
  type Faults,
  type Lifecycle,
  type Random,
  type SimulationReport,
} from '../../src/simulator';
import type { TestService } from './service';
import { SECOND_KEY } from './signing';

/** Plays lifecycles against a test service as the payment service does (MD5, both headers), 20 times faster. */
export function simulateAgainst(
  svc: Pick<TestService, 'publicUrl'>,
  lifecycles: readonly Lifecycle[],
  random: Random,
  faults: Faults,
): Promise<SimulationReport> {
  return runSimulation({
    url: `${svc.publicUrl}/notifications`,
    lifecycles,
    secondKey: SECOND_KEY,
    algorithm: 'MD5',
    signatureHeaders: 'both',
    processingTime: true,
    faults,
    random,
    clock: scaledClock(20),
  });
}
