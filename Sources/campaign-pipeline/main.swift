import ArgumentParser
import CampaignPipelineCLI

await CampaignPipelineCommand.main()
