/* toposcope gen — generated fabrics for experiments and benchmarks, as topology.conf. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "toposcope/fabric.h"
#include "toposcope/gen.h"
#include "toposcope/topoconf.h"

static void gen_usage(FILE *out)
{
    fprintf(out,
            "usage: toposcope gen (--fat-tree P | --regular F1,F2,...,NODES | --irregular) [options]\n"
            "\n"
            "Write a generated fabric to standard output in Slurm topology.conf syntax.\n"
            "\n"
            "  --fat-tree P         the tree abstraction of a P-port 3-tree fat tree (P^3/4 nodes)\n"
            "  --regular LIST       switches per level, the last entry nodes per leaf switch\n"
            "  --irregular          a random irregular tree (depth 2-4, fan-out 2-9, leaves 1-24)\n"
            "  --seed N             seed of the irregular tree and of name shuffling (default 1)\n"
            "  --no-shuffle         keep node names in tree order (default: shuffled, so hostnames\n"
            "                       carry no hint of the topology)\n"
            "  -h, --help           this text\n");
}

int cmd_gen(int argc, char **argv)
{
    enum { O_FAT = 256, O_REG, O_IRR, O_SEED, O_NOSHUF };
    static const struct option longopts[] = {
        {"fat-tree", required_argument, 0, O_FAT}, {"regular", required_argument, 0, O_REG},
        {"irregular", no_argument, 0, O_IRR}, {"seed", required_argument, 0, O_SEED},
        {"no-shuffle", no_argument, 0, O_NOSHUF}, {"help", no_argument, 0, 'h'}, {0, 0, 0, 0},
    };
    const char *fat = NULL, *reg = NULL;
    int irregular = 0, shuffle = 1, c;
    uint64_t seed = 1, p;
    optind = 1;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case O_FAT: fat = optarg; break;
        case O_REG: reg = optarg; break;
        case O_IRR: irregular = 1; break;
        case O_NOSHUF: shuffle = 0; break;
        case O_SEED:
            if (cli_parse_u64(optarg, &seed)) {
                cli_error("gen", "--seed wants a whole number, not '%s'", optarg);
                return CLI_USAGE;
            }
            break;
        case 'h': gen_usage(stdout); return CLI_OK;
        default: gen_usage(stderr); return CLI_USAGE;
        }
    }
    if (!!fat + !!reg + irregular != 1) {
        cli_error("gen", "choose exactly one of --fat-tree, --regular, --irregular");
        return CLI_USAGE;
    }
    ts_fabric f;
    ts_error err;
    int rc;
    uint64_t shuffle_seed = shuffle ? (seed ? seed : 1) : 0;
    if (fat) {
        if (cli_parse_u64(fat, &p) || p > 64) {
            cli_error("gen", "--fat-tree wants an even port count 4..64, not '%s'", fat);
            return CLI_USAGE;
        }
        rc = ts_gen_fat_tree(&f, (int)p, shuffle_seed, &err);
    } else if (reg) {
        int fan[16], n = 0;
        char *copy = strdup(reg), *save = NULL;
        if (!copy) {
            cli_error("gen", "out of memory");
            return CLI_FAIL;
        }
        for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
            if (n == 16 || cli_parse_u64(tok, &p) || p < 1 || p > 100000) {
                free(copy);
                cli_error("gen", "--regular wants up to 16 counts like 4,8,16, not '%s'", reg);
                return CLI_USAGE;
            }
            fan[n++] = (int)p;
        }
        free(copy);
        rc = ts_gen_regular(&f, fan, n, shuffle_seed, &err);
    } else {
        rc = ts_gen_irregular(&f, seed, &err);
    }
    if (rc != TS_OK) {
        cli_error("gen", "%s", err.text);
        return rc == TS_EINPUT ? CLI_USAGE : CLI_FAIL;
    }
    rc = ts_fabric_write_topology_conf(&f, stdout);
    ts_fabric_free(&f);
    return rc == TS_OK && !ferror(stdout) ? CLI_OK : CLI_FAIL;
}
