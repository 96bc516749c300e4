-- Release 1.25.244 (spec 4.17 rule 4): a first_deposit row holds the earliest credited deposit of its
-- customer. Rows written before it held the deposit written last; this corrects them from the customer's
-- Deposit rows (one per cashier transaction). Idempotent: a corrected row matches and is left alone.
UPDATE affiliate_conversions
SET value_minor = e.value_minor,
    currency = e.currency,
    reference_id = e.reference_id,
    event_time = e.event_time,
    event_id = e.event_id
FROM (
  SELECT customer_id, value_minor, currency, reference_id, event_time, event_id,
         row_number() OVER (PARTITION BY customer_id ORDER BY event_time, event_id) AS n
  FROM affiliate_conversions
  WHERE kind = 'deposit'
) AS e
WHERE affiliate_conversions.kind = 'first_deposit'
  AND e.customer_id = affiliate_conversions.customer_id
  AND e.n = 1
  AND (affiliate_conversions.reference_id IS NOT e.reference_id
    OR affiliate_conversions.value_minor IS NOT e.value_minor
    OR affiliate_conversions.currency IS NOT e.currency
    OR affiliate_conversions.event_time IS NOT e.event_time);
