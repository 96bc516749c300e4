// The pure part of market's public surface: functions of their inputs that other modules' domain/ code
// may import (docs/architecture.md rule 3). The index loads the module (the cache, the database, Elysia);
// this file reaches only market's domain/, which the dependency rules check.
export { conversionRate, type Quote, type QuoteLookup } from './domain/conversion'
export { quoteAgeOver } from './domain/quote-age'
export { type DaySessions, isTradingOpen } from './domain/sessions'
