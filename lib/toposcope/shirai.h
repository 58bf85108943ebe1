/* toposcope — Shirai's insertion baseline (lib/discover/shirai.c; HPDC'07, seed 003): a discovery method driving a ts_probe_engine, like those of discover.h. */
#ifndef TOPOSCOPE_SHIRAI_H
#define TOPOSCOPE_SHIRAI_H

#include "toposcope/error.h"
#include "toposcope/infer.h"
#include "toposcope/probe.h"

int ts_discover_shirai(ts_probe_engine *e, ts_utree *tree, ts_infer_report *rep, ts_error *err);

#endif
