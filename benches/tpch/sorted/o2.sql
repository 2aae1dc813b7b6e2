-- Revenue of the first ten orders by key: the aggregation streams (and stops) on ordered input.
SELECT l_orderkey, sum(l_extendedprice * (1 - l_discount)) AS revenue
FROM lineitem GROUP BY l_orderkey ORDER BY l_orderkey LIMIT 10;
