/** Declaration merging against the built declarations users get (dist/*.d.ts, ESM and CJS). */
import { declarationMergingCases } from './declaration-merging-cases.js';

declarationMergingCases('built declarations');
