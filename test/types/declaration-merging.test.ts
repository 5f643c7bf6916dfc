/** Declaration merging against the sources; the built declarations are in the package tier. */
import { declarationMergingCases } from './declaration-merging-cases.js';

declarationMergingCases('sources');
