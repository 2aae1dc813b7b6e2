-- Every line item in order-key order: a full sort, unless the scan delivers that order.
SELECT l_orderkey, l_partkey, l_quantity FROM lineitem ORDER BY l_orderkey;
