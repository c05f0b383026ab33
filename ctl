xid 2 48
